#pragma once
/* Included by jpeg.h (after jpeglib.h with JPEG_INTERNALS), not on its own. */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string.h>

/* The 3/8-scale inverse DCT, in SSE2: a portrait 12 MP photo decodes at 3/8 (its 860 px
   wide base needs more rows than 1/4 gives), and libjpeg-turbo 2.1's 3x3 IDCT is scalar C,
   ~190 instructions a block and 16% of such a decode (callgrind); this one is ~50. Same
   arithmetic (13-bit fixed-point constants, the same rounding and shifts), so the same
   pixels (JPEGDecodeTests): each of the nine outputs of a pass is a sum of three inputs
   times constants, which SSE2's pmaddwd does two pairs at a time. Values are 16-bit between
   the passes as in libjpeg's own design; only coefficients no 8-bit image has (dequantized
   beyond 16 bits) would come out differently, as different garbage. Installed in place of
   libjpeg's method after jpeg_start_decompress (jpegint.h's interface, unchanged since
   libjpeg 6), only where libjpeg chose its 3x3 and its multiplier table holds shorts. */

/* Exported by libjpeg(-turbo) (jdct.h is not installed). */
extern void jpeg_idct_3x3(j_decompress_ptr cinfo, jpeg_component_info *compptr, JCOEFPTR coef_block,
                          JSAMPARRAY output_buf, JDIMENSION output_col);

#if defined(__SSE2__)
static void pm_jpeg_idct_3x3(j_decompress_ptr cinfo, jpeg_component_info *compptr, JCOEFPTR coef,
                             JSAMPARRAY out, JDIMENSION col) {
    (void)cinfo;
    const short *q = (const short *)compptr->dct_table;
    /* Rows 0..2 of the block, dequantized (lane 3 is unused). */
    __m128i c0 = _mm_mullo_epi16(_mm_loadl_epi64((const __m128i *)coef), _mm_loadl_epi64((const __m128i *)q));
    __m128i c1 = _mm_mullo_epi16(_mm_loadl_epi64((const __m128i *)(coef + 8)), _mm_loadl_epi64((const __m128i *)(q + 8)));
    __m128i c2 = _mm_mullo_epi16(_mm_loadl_epi64((const __m128i *)(coef + 16)), _mm_loadl_epi64((const __m128i *)(q + 16)));
    /* Pass 1, down each column: out = c0*8192 + c1*k1 + c2*k2 + 1024 (rounding), >> 11.
       k1 = +-c1 = +-FIX(1.224744871) = 10033, k2 = c2 = FIX(0.707106781) = 5793 (or -2*c2
       for the middle row). Pairs (c0, c1) and (c2, 1) per column. */
    __m128i p01 = _mm_unpacklo_epi16(c0, c1), p2 = _mm_unpacklo_epi16(c2, _mm_set1_epi16(1));
#define PM_PAIR(lo, hi) _mm_set1_epi32((int)(((unsigned)(unsigned short)(hi) << 16) | (unsigned short)(lo)))
    __m128i w0 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(p01, PM_PAIR(8192, 10033)), _mm_madd_epi16(p2, PM_PAIR(5793, 1024))), 11);
    __m128i w1 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(p01, PM_PAIR(8192, 0)), _mm_madd_epi16(p2, PM_PAIR(-11586, 1024))), 11);
    __m128i w2 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(p01, PM_PAIR(8192, -10033)), _mm_madd_epi16(p2, PM_PAIR(5793, 1024))), 11);
#undef PM_PAIR
    /* Pass 2, along each row r: the pairs (w_r0, w_r1) and (w_r2, 4112) in every lane, lane
       k making output column k. 4112 * 8192 = (16 << 13) rounding + (128 << 18), the
       sample centre; >> 18 then leaves the sample, which the saturating packs clamp to
       0..255 as libjpeg's range-limit table does for every value a real image gives. */
    const __m128i keep = _mm_set_epi16(0, -1, -1, -1, 0, -1, -1, -1), centre = _mm_set_epi16(4112, 0, 0, 0, 4112, 0, 0, 0);
    __m128i r01 = _mm_or_si128(_mm_and_si128(_mm_packs_epi32(w0, w1), keep), centre);
    __m128i r22 = _mm_or_si128(_mm_and_si128(_mm_packs_epi32(w2, w2), keep), centre);
    const __m128i k01 = _mm_set_epi16(0, 0, -10033, 8192, 0, 8192, 10033, 8192);
    const __m128i k2 = _mm_set_epi16(0, 0, 8192, 5793, 8192, -11586, 8192, 5793);
#define PM_ROW(p, first, second) _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(_mm_shuffle_epi32(p, first), k01), \
                                                              _mm_madd_epi16(_mm_shuffle_epi32(p, second), k2)), 18)
    __m128i o0 = PM_ROW(r01, 0x00, 0x55), o1 = PM_ROW(r01, 0xAA, 0xFF), o2 = PM_ROW(r22, 0x00, 0x55);
#undef PM_ROW
    unsigned char v[16];
    _mm_storeu_si128((__m128i *)v, _mm_packus_epi16(_mm_packs_epi32(o0, o1), _mm_packs_epi32(o2, o2)));
    /* Three bytes a row: the next block's (or the row's end) follows. */
    memcpy(out[0] + col, v, 3);
    memcpy(out[1] + col, v + 4, 3);
    memcpy(out[2] + col, v + 8, 3);
}
#endif

/* After jpeg_start_decompress: the components it replaced libjpeg's 3x3 for. */
static inline int pm_jpeg_idct_install(j_decompress_ptr cinfo) {
    int replaced = 0;
#if defined(__SSE2__)
    for (int ci = 0; ci < cinfo->num_components; ci++) {
        jpeg_component_info *comp = &cinfo->comp_info[ci];
        if (cinfo->idct->inverse_DCT[ci] != jpeg_idct_3x3 || !comp->quant_table || !comp->dct_table) continue;
        /* A SIMD build keeps 16-bit multipliers (jmorecfg.h); anything else keeps libjpeg's. */
        const short *table = (const short *)comp->dct_table;
        int shorts = 1;
        for (int i = 0; i < DCTSIZE2 && shorts; i++) shorts = table[i] == (short)comp->quant_table->quantval[i];
        if (!shorts) continue;
        cinfo->idct->inverse_DCT[ci] = pm_jpeg_idct_3x3;
        replaced++;
    }
#else
    (void)cinfo;
#endif
    return replaced;
}
