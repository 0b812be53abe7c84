#pragma once
/* Included by jpeg.h (after jpeglib.h with JPEG_INTERNALS), not on its own. */
#include <stdint.h>
#include <string.h>

/* Baseline Huffman decoding for pm_jpeg_decode, in place of libjpeg-turbo 2.1's decode_mcu.
   Huffman decoding was ~55% of a 12 MP photo's CPU in the daemon (perf, 2026-12-04): libjpeg
   reads the stream a byte at a time with a branch on 0xFF for each, looks 8 bits ahead, and
   reads each coefficient's value bits apart from its code. Here 8 bytes load at once when
   none is 0xFF, the table looks 11 bits ahead, and a small coefficient's code and value bits
   come from one table entry (most coefficients at photo quality). The same coefficients, so
   the same pixels (JPEGDecodeTests); damaged data is a warning as in libjpeg, which fails the
   decode (pm_jpeg_emit_message). Installed after jpeg_start_decompress through jpegint.h's
   entropy interface (unchanged since libjpeg 6), for a single-scan 8-bit Huffman JPEG only:
   progressive, arithmetic-coded and multi-scan files keep libjpeg's. */

#define PM_HUFF_LOOK 11

struct pm_huff_table {
    /* By the next PM_HUFF_LOOK bits. 0: the code is longer (pm_huff_long). Else bits 0-4:
       bits to drop; bit 5: the coefficient, its value bits included, is bits 16-31; bits
       8-15: the symbol. */
    int32_t fast[1 << PM_HUFF_LOOK];
    int32_t maxcode[17]; /* the largest code of each length; -1: none */
    int32_t valoffset[17];
    uint8_t huffval[256];
};

struct pm_huff_state {
    struct pm_huff_table dc[NUM_HUFF_TBLS], ac[NUM_HUFF_TBLS];
    const struct pm_huff_table *block_dc[D_MAX_BLOCKS_IN_MCU], *block_ac[D_MAX_BLOCKS_IN_MCU];
    const uint8_t *pos, *end;
    uint64_t acc;  /* the next cnt bits of the stream from the top; zeros below */
    int cnt, fake; /* fake: zero bits put in past a marker (cnt < fake: data ran out) */
    int last_dc[MAX_COMPS_IN_SCAN];
    unsigned restarts_to_go;
    int next_restart;
};

/* Canonical codes from the DHT segment's counts (JPEG F.2.2.3), with libjpeg's checks. */
static void pm_huff_build(j_decompress_ptr cinfo, const JHUFF_TBL *t, int dc, struct pm_huff_table *out) {
    int total = 0;
    for (int l = 1; l <= 16; l++) total += t->bits[l];
    if (total > 256) ERREXIT(cinfo, JERR_BAD_HUFF_TABLE);
    memcpy(out->huffval, t->huffval, sizeof out->huffval);
    memset(out->fast, 0, sizeof out->fast);
    int32_t code = 0;
    int k = 0;
    for (int l = 1; l <= 16; l++) {
        /* Codes of length l fit below 2^l, all ones kept free (libjpeg checks it first too). */
        if (code + t->bits[l] >= (int32_t)1 << l && t->bits[l]) ERREXIT(cinfo, JERR_BAD_HUFF_TABLE);
        out->valoffset[l] = k - code;
        for (int i = 0; i < t->bits[l]; i++, k++, code++) {
            int sym = t->huffval[k], s = dc ? sym : sym & 15, spare = PM_HUFF_LOOK - l;
            if (dc && sym > 15) ERREXIT(cinfo, JERR_BAD_HUFF_TABLE);
            for (int after = 0; spare >= 0 && after < 1 << spare; after++) {
                int32_t e = sym << 8 | l;
                if (s && l + s <= PM_HUFF_LOOK) {
                    int v = (after >> (spare - s)) & ((1 << s) - 1);
                    if (v < 1 << (s - 1)) v -= (1 << s) - 1;
                    e = (int32_t)((uint32_t)v << 16) | sym << 8 | 0x20 | (l + s);
                }
                out->fast[code << spare | after] = e;
            }
        }
        out->maxcode[l] = t->bits[l] ? code - 1 : -1;
        code <<= 1;
    }
}

/* A code longer than the table looks: JPEG F.16 from length PM_HUFF_LOOK + 1. -1: none. */
static int pm_huff_long(const struct pm_huff_table *t, uint64_t acc, int *len) {
    for (int l = PM_HUFF_LOOK + 1; l <= 16; l++) {
        int32_t code = (int32_t)(acc >> (64 - l));
        if (code <= t->maxcode[l]) {
            *len = l;
            return t->huffval[(code + t->valoffset[l]) & 0xFF];
        }
    }
    return -1;
}

/* The next byte; -1 at the data's end, where libjpeg's memory source warns and makes up an
   end-of-image marker. */
static inline int pm_huff_byte(j_decompress_ptr cinfo, struct pm_huff_state *h, const uint8_t **pp) {
    if (*pp < h->end) return *(*pp)++;
    WARNMS(cinfo, JWRN_JPEG_EOF);
    return -1;
}

/* At least 56 bits in acc: 8 bytes at once where none is 0xFF (a stuffed byte or a marker),
   else a byte at a time; past a marker (or the data's end) zeros, counted in fake. */
static inline __attribute__((always_inline)) void pm_huff_fill(j_decompress_ptr cinfo, struct pm_huff_state *h,
                                                               const uint8_t **pp, uint64_t *accp, int *cntp) {
    const uint8_t *p = *pp;
    uint64_t acc = *accp;
    int cnt = *cntp;
    if (h->end - p >= 8 && !cinfo->unread_marker) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t x = ~w; /* a 0xFF byte is a zero byte here */
        if (!((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull)) {
            int n = (63 - cnt) >> 3;
            acc |= __builtin_bswap64(w) >> cnt;
            p += n;
            cnt += n << 3;
            acc &= ~(~0ull >> cnt);
            *pp = p, *accp = acc, *cntp = cnt;
            return;
        }
    }
    while (cnt <= 56) {
        if (cinfo->unread_marker) {
            h->fake += 64 - cnt;
            cnt = 64;
            break;
        }
        int c = pm_huff_byte(cinfo, h, &p);
        if (c == 0xFF) {
            do c = pm_huff_byte(cinfo, h, &p);
            while (c == 0xFF);
            if (c) {
                cinfo->unread_marker = c < 0 ? 0xD9 : c;
                continue;
            }
            c = 0xFF; /* 0xFF 0x00: a 0xFF data byte */
        } else if (c < 0) {
            cinfo->unread_marker = 0xD9;
            continue;
        }
        acc |= (uint64_t)c << (56 - cnt);
        cnt += 8;
    }
    *pp = p, *accp = acc, *cntp = cnt;
}

/* One symbol's code (then its value's bits, if the entry holds them) off acc. */
#define PM_HUFF_DROP(n) (acc <<= (n), cnt -= (n))
#define PM_HUFF_EXTEND(v, s) ((v) < 1 << ((s) - 1) ? (v) - ((1 << (s)) - 1) : (v))

static int pm_huff_symbol(j_decompress_ptr cinfo, const struct pm_huff_table *t, int32_t e, uint64_t acc, int *len) {
    if (e) {
        *len = e & 31;
        return (e >> 8) & 0xFF;
    }
    int sym = pm_huff_long(t, acc, len);
    if (sym < 0) {
        WARNMS(cinfo, JWRN_HUFF_BAD_CODE);
        *len = 16;
        sym = 0;
    }
    return sym;
}

/* A restart marker ends each restart interval: the bits left before it are its last byte's
   padding. A whole byte left means damage (the interval decoded with fewer bits), which
   libjpeg warns of too where its smaller read-ahead leaves that byte before the marker.
   (At the scan's end libjpeg's marker reader sees only the bytes after `pos`: junk this
   read-ahead holds already, up to 7 bytes, passes there, as a few bytes do with libjpeg's.) */
static void pm_huff_restart(j_decompress_ptr cinfo, struct pm_huff_state *h) {
    if (h->cnt - h->fake >= 8) WARNMS2(cinfo, JWRN_EXTRANEOUS_DATA, (h->cnt - h->fake) / 8, 0xD0 + h->next_restart);
    h->acc = 0, h->cnt = 0, h->fake = 0;
    int m = cinfo->unread_marker;
    if (!m && h->pos < h->end) {
        if (*h->pos != 0xFF) WARNMS2(cinfo, JWRN_EXTRANEOUS_DATA, 1, 0xD0 + h->next_restart);
        while (h->pos < h->end && *h->pos == 0xFF) h->pos++;
        if (h->pos < h->end) m = *h->pos++;
    }
    if (m != 0xD0 + h->next_restart) WARNMS2(cinfo, JWRN_MUST_RESYNC, m, h->next_restart);
    cinfo->unread_marker = 0;
    h->next_restart = (h->next_restart + 1) & 7;
    memset(h->last_dc, 0, sizeof h->last_dc);
    h->restarts_to_go = cinfo->restart_interval;
}

static boolean pm_huff_decode_mcu(j_decompress_ptr cinfo, JBLOCKROW *MCU_data) {
    struct pm_huff_state *h = (struct pm_huff_state *)cinfo->client_data;
    if (cinfo->restart_interval) {
        if (h->restarts_to_go == 0) pm_huff_restart(cinfo, h);
        h->restarts_to_go--;
    }
    const uint8_t *p = h->pos;
    uint64_t acc = h->acc;
    int cnt = h->cnt;
    JBLOCK spare; /* where a block no one wants goes */
    for (int b = 0; b < cinfo->blocks_in_MCU; b++) {
        JCOEF *block = MCU_data && MCU_data[b] ? MCU_data[b][0] : spare;
        const struct pm_huff_table *dc = h->block_dc[b], *ac = h->block_ac[b];
        int len, ci = cinfo->MCU_membership[b];
        if (cnt < 32) pm_huff_fill(cinfo, h, &p, &acc, &cnt);
        int32_t e = dc->fast[acc >> (64 - PM_HUFF_LOOK)], diff;
        if (e & 0x20) {
            diff = e >> 16;
            PM_HUFF_DROP(e & 31);
        } else {
            int s = pm_huff_symbol(cinfo, dc, e, acc, &len);
            PM_HUFF_DROP(len);
            diff = 0;
            if (s) {
                int v = (int)(acc >> (64 - s));
                PM_HUFF_DROP(s);
                diff = PM_HUFF_EXTEND(v, s);
            }
        }
        /* Unsigned: a crafted file's differences may run a sum past int (as in libjpeg). */
        h->last_dc[ci] = (int)((unsigned)h->last_dc[ci] + (unsigned)diff);
        block[0] = (JCOEF)h->last_dc[ci];
        for (int k = 1; k < DCTSIZE2;) {
            if (cnt < 32) pm_huff_fill(cinfo, h, &p, &acc, &cnt);
            e = ac->fast[acc >> (64 - PM_HUFF_LOOK)];
            if (e & 0x20) {
                k += (e >> 12) & 15;
                block[jpeg_natural_order[k]] = (JCOEF)(e >> 16); /* past 63 (damaged): 63, as libjpeg */
                k++;
                PM_HUFF_DROP(e & 31);
                continue;
            }
            int sym = pm_huff_symbol(cinfo, ac, e, acc, &len), r = sym >> 4, s = sym & 15;
            PM_HUFF_DROP(len);
            if (s) {
                k += r;
                int v = (int)(acc >> (64 - s));
                PM_HUFF_DROP(s);
                block[jpeg_natural_order[k]] = (JCOEF)PM_HUFF_EXTEND(v, s);
                k++;
            } else if (r == 15) {
                k += 16;
            } else {
                break;
            }
        }
    }
    if (cnt < h->fake && !cinfo->entropy->insufficient_data) {
        cinfo->entropy->insufficient_data = TRUE;
        WARNMS(cinfo, JWRN_HIT_MARKER);
    }
    h->pos = p, h->acc = acc, h->cnt = cnt;
    cinfo->src->next_input_byte = p; /* where libjpeg's marker reader goes on from */
    cinfo->src->bytes_in_buffer = (size_t)(h->end - p);
    return TRUE;
}
#undef PM_HUFF_DROP
#undef PM_HUFF_EXTEND

/* After jpeg_start_decompress (no data decoded yet): 1 if installed. `h` lives as long as
   the decompressor's image (cinfo's own pool, JPOOL_IMAGE). */
static inline int pm_huff_install(j_decompress_ptr cinfo) {
    if (cinfo->progressive_mode || cinfo->arith_code || cinfo->data_precision != 8 || cinfo->inputctl->has_multiple_scans ||
        cinfo->comps_in_scan < 1 || cinfo->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU || cinfo->client_data)
        return 0;
    for (int i = 0; i < cinfo->comps_in_scan; i++) {
        jpeg_component_info *comp = cinfo->cur_comp_info[i];
        if (comp->dc_tbl_no < 0 || comp->dc_tbl_no >= NUM_HUFF_TBLS || !cinfo->dc_huff_tbl_ptrs[comp->dc_tbl_no] ||
            comp->ac_tbl_no < 0 || comp->ac_tbl_no >= NUM_HUFF_TBLS || !cinfo->ac_huff_tbl_ptrs[comp->ac_tbl_no])
            return 0;
    }
    struct pm_huff_state *h = (struct pm_huff_state *)(*cinfo->mem->alloc_large)((j_common_ptr)cinfo, JPOOL_IMAGE, sizeof *h);
    memset(h, 0, sizeof *h);
    int built = 0; /* bit t: DC table t; bit 4 + t: AC table t */
    for (int i = 0; i < cinfo->comps_in_scan; i++) {
        jpeg_component_info *comp = cinfo->cur_comp_info[i];
        if (!(built & 1 << comp->dc_tbl_no)) pm_huff_build(cinfo, cinfo->dc_huff_tbl_ptrs[comp->dc_tbl_no], 1, &h->dc[comp->dc_tbl_no]);
        if (!(built & 16 << comp->ac_tbl_no)) pm_huff_build(cinfo, cinfo->ac_huff_tbl_ptrs[comp->ac_tbl_no], 0, &h->ac[comp->ac_tbl_no]);
        built |= 1 << comp->dc_tbl_no | 16 << comp->ac_tbl_no;
    }
    for (int b = 0; b < cinfo->blocks_in_MCU; b++) {
        jpeg_component_info *comp = cinfo->cur_comp_info[cinfo->MCU_membership[b]];
        h->block_dc[b] = &h->dc[comp->dc_tbl_no];
        h->block_ac[b] = &h->ac[comp->ac_tbl_no];
    }
    h->pos = cinfo->src->next_input_byte;
    h->end = h->pos + cinfo->src->bytes_in_buffer;
    h->restarts_to_go = cinfo->restart_interval;
    cinfo->client_data = h;
    cinfo->entropy->decode_mcu = pm_huff_decode_mcu;
    return 1;
}
