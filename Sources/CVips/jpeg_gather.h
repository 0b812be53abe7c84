#pragma once
/* Included by jpeg.h (after jpeglib.h with JPEG_INTERNALS), not on its own. */
#include <string.h>
#include <jerror.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* optimize_coding's statistics pass, faster: libjpeg-turbo 2.1 counts each block's
   Huffman symbols in scalar C (htest_one_block: a branch per coefficient and a loop per
   bit), ~60% of encoding an 860x645 rendition. This counts the same symbols (a bit mask
   of the non-zero coefficients in zigzag order, SSE2 where there is one, walked a set
   bit at a time) into the same tables, so the file is byte for byte what libjpeg writes itself
   (JPEGEncodeTests). Installed in place of the entropy encoder's gather methods after
   jpeg_start_compress (jpegint.h's interface, unchanged since libjpeg 6); the output
   pass is libjpeg's own (start_pass replaces both methods for it). Sequential, one scan,
   no restart interval, 8-bit: what pm_jpeg_encode asks for. */

/* Exported by libjpeg(-turbo) (jchuff.h is not installed): builds an optimal table from
   symbol counts (freq has 257 entries; it is clobbered). */
extern void jpeg_gen_optimal_table(j_compress_ptr cinfo, JHUFF_TBL *htbl, long freq[]);

struct pm_jpeg_gather {
    long dc[NUM_HUFF_TBLS][257];
    long ac[NUM_HUFF_TBLS][257];
    int last_dc[MAX_COMPS_IN_SCAN];
};

static inline int pm_jpeg_nbits(int v) {
    unsigned int a = (unsigned int)(v < 0 ? -v : v);
    return a ? 32 - __builtin_clz(a) : 0;
}

/* The block's coefficients in zigzag order into `zz`, and which are non-zero (bit k:
   zigzag index k). */
static inline unsigned long long pm_jpeg_zigzag(const JCOEF *block, JCOEF zz[64]) {
    for (int k = 0; k < 64; k++) zz[k] = block[jpeg_natural_order[k]];
    unsigned long long mask = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    for (int i = 0; i < 64; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(zz + i)), b = _mm_loadu_si128((const __m128i *)(zz + i + 8));
        unsigned int z = (unsigned int)_mm_movemask_epi8(_mm_packs_epi16(_mm_cmpeq_epi16(a, zero), _mm_cmpeq_epi16(b, zero)));
        mask |= (unsigned long long)(~z & 0xFFFF) << i;
    }
#else
    for (int k = 0; k < 64; k++) mask |= (unsigned long long)(zz[k] != 0) << k;
#endif
    return mask;
}

/* encode_mcu during the statistics pass: htest_one_block's counts for every block of the MCU. */
static boolean pm_jpeg_gather_mcu(j_compress_ptr cinfo, JBLOCKROW *data) {
    struct pm_jpeg_gather *g = (struct pm_jpeg_gather *)cinfo->client_data;
    for (int blkn = 0; blkn < cinfo->blocks_in_MCU; blkn++) {
        int ci = cinfo->MCU_membership[blkn];
        jpeg_component_info *comp = cinfo->cur_comp_info[ci];
        const JCOEF *block = data[blkn][0];
        JCOEF zz[64];
        long *ac = g->ac[comp->ac_tbl_no];
        int nbits = pm_jpeg_nbits(block[0] - g->last_dc[ci]);
        g->last_dc[ci] = block[0];
        if (nbits > cinfo->data_precision + 3) ERREXIT(cinfo, JERR_BAD_DCT_COEF);
        g->dc[comp->dc_tbl_no][nbits]++;
        unsigned long long mask = pm_jpeg_zigzag(block, zz) & ~1ULL;  /* AC only */
        int last = 0;
        while (mask) {
            int k = __builtin_ctzll(mask);
            mask &= mask - 1;
            int run = k - last - 1;
            last = k;
            for (; run > 15; run -= 16) ac[0xF0]++;  /* ZRL */
            nbits = pm_jpeg_nbits(zz[k]);
            if (nbits > cinfo->data_precision + 2) ERREXIT(cinfo, JERR_BAD_DCT_COEF);
            ac[(run << 4) + nbits]++;
        }
        if (last < 63) ac[0]++;  /* EOB */
    }
    return TRUE;
}

/* finish_pass after the statistics pass: finish_pass_gather's tables, once per table. */
static void pm_jpeg_gather_finish(j_compress_ptr cinfo) {
    struct pm_jpeg_gather *g = (struct pm_jpeg_gather *)cinfo->client_data;
    boolean did_dc[NUM_HUFF_TBLS] = {0}, did_ac[NUM_HUFF_TBLS] = {0};
    for (int ci = 0; ci < cinfo->comps_in_scan; ci++) {
        jpeg_component_info *comp = cinfo->cur_comp_info[ci];
        int dc = comp->dc_tbl_no, ac = comp->ac_tbl_no;
        if (!did_dc[dc]) {
            if (!cinfo->dc_huff_tbl_ptrs[dc]) cinfo->dc_huff_tbl_ptrs[dc] = jpeg_alloc_huff_table((j_common_ptr)cinfo);
            jpeg_gen_optimal_table(cinfo, cinfo->dc_huff_tbl_ptrs[dc], g->dc[dc]);
            did_dc[dc] = TRUE;
        }
        if (!did_ac[ac]) {
            if (!cinfo->ac_huff_tbl_ptrs[ac]) cinfo->ac_huff_tbl_ptrs[ac] = jpeg_alloc_huff_table((j_common_ptr)cinfo);
            jpeg_gen_optimal_table(cinfo, cinfo->ac_huff_tbl_ptrs[ac], g->ac[ac]);
            did_ac[ac] = TRUE;
        }
    }
}

/* After jpeg_start_compress: the statistics pass counts with `g` (zeroed here). Left to
   libjpeg for anything but a single-scan sequential 8-bit encode without restarts. */
static inline void pm_jpeg_gather_install(j_compress_ptr cinfo, struct pm_jpeg_gather *g) {
    if (!cinfo->optimize_coding || cinfo->progressive_mode || cinfo->num_scans > 1 || cinfo->restart_interval != 0
        || cinfo->restart_in_rows != 0 || cinfo->data_precision != 8 || cinfo->arith_code) return;
    memset(g, 0, sizeof *g);
    cinfo->client_data = g;
    cinfo->entropy->encode_mcu = pm_jpeg_gather_mcu;
    cinfo->entropy->finish_pass = pm_jpeg_gather_finish;
}
