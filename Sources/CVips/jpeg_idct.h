#pragma once
/* Included by jpeg.h (after jpeglib.h with JPEG_INTERNALS), not on its own. */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string.h>

/* The 3/8-scale inverse DCTs, in SSE2. A portrait 12 MP photo decodes at 3/8 (its 860 px
   wide base needs more rows than 1/4 gives): libjpeg-turbo 2.1 then runs its scalar 3x3
   IDCT on every block (~190 instructions a block, 16% of a 4:4:4 decode, callgrind) and,
   for a 4:2:0 photo's chroma, its scalar 6x6 (libjpeg upsamples chroma in the inverse DCT;
   ~840 instructions a block, 15% of such a decode). These do the same arithmetic (13-bit
   fixed-point constants, the same rounding and shifts), so the same pixels
   (JPEGDecodeTests): within a pass libjpeg's factored steps are exact integer sums, so each
   output is one sum of its column's (then row's) inputs times constants, which SSE2's
   pmaddwd does two pairs at a time; the rounding shifts stay where libjpeg has them. Values
   are 16-bit between the passes as in libjpeg's own design, and the saturating packs clamp
   as libjpeg's range-limit table does for every value within 512 of the range. Only
   coefficients no real 8-bit image has (crafted: samples far out of range, or dequantized
   beyond 16 bits) come out differently, as different garbage: libjpeg's table wraps them.
   Installed in place of libjpeg's methods after jpeg_start_decompress (jpegint.h's
   interface, unchanged since libjpeg 6), only where libjpeg chose its own and its
   multiplier table holds shorts. */

/* Exported by libjpeg(-turbo) (jdct.h is not installed). */
extern void jpeg_idct_3x3(j_decompress_ptr cinfo, jpeg_component_info *compptr, JCOEFPTR coef_block,
                          JSAMPARRAY output_buf, JDIMENSION output_col);
extern void jpeg_idct_6x6(j_decompress_ptr cinfo, jpeg_component_info *compptr, JCOEFPTR coef_block,
                          JSAMPARRAY output_buf, JDIMENSION output_col);

#if defined(__SSE2__)
/* Every 32-bit lane the pair (lo, hi) of 16-bit multipliers, for pmaddwd. */
#define PM_PAIR(lo, hi) _mm_set1_epi32((int)(((unsigned)(unsigned short)(hi) << 16) | (unsigned short)(lo)))

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
    __m128i w0 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(p01, PM_PAIR(8192, 10033)), _mm_madd_epi16(p2, PM_PAIR(5793, 1024))), 11);
    __m128i w1 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(p01, PM_PAIR(8192, 0)), _mm_madd_epi16(p2, PM_PAIR(-11586, 1024))), 11);
    __m128i w2 = _mm_srai_epi32(_mm_add_epi32(_mm_madd_epi16(p01, PM_PAIR(8192, -10033)), _mm_madd_epi16(p2, PM_PAIR(5793, 1024))), 11);
    /* Pass 2, along each row r: the pairs (w_r0, w_r1) and (w_r2, 4112) in every lane, lane
       k making output column k. 4112 * 8192 = (16 << 13) rounding + (128 << 18), the
       sample centre; >> 18 then leaves the sample, which the saturating packs clamp to
       0..255 (above: where libjpeg's table differs). */
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

/* 6x6: per column (pass 1) and per row (pass 2) of inputs x0..x5, the outputs are
   (e +- o) >> shift with even parts e over (x0, x2, x4) and odd parts o over (x1, x3, x5):
     rows 0, 5: e = 8192 x0 + 10033 x2 + 5793 x4,  o = 11190 x1 + 8192 x3 + 2998 x5
     rows 2, 3: e = 8192 x0 - 10033 x2 + 5793 x4,  o = 2998 x1 - 8192 x3 + 11190 x5
     rows 1, 4: e = 8192 x0 - 11586 x4,            o = 8192 (x1 - x3 - x5)
   (c2 = FIX(1.224744871) = 10033, c4 = FIX(0.707106781) = 5793, c5 = FIX(0.366025404) =
   2998; rows 1 and 4's odd part is libjpeg's x << PASS1_BITS after the shift, the same
   integer before it.) Pass 1 works on four columns at a time, pass 2 on a row's six
   outputs at once. */
static inline void pm_jpeg_idct_6_columns(__m128i a, __m128i b, __m128i c, __m128i d, __m128i r[6]) {
    /* a = (x0, x2), b = (x4, 1: the rounding 1024), c = (x1, x3), d = (x5, 0) */
    __m128i e05 = _mm_add_epi32(_mm_madd_epi16(a, PM_PAIR(8192, 10033)), _mm_madd_epi16(b, PM_PAIR(5793, 1024)));
    __m128i o05 = _mm_add_epi32(_mm_madd_epi16(c, PM_PAIR(11190, 8192)), _mm_madd_epi16(d, PM_PAIR(2998, 0)));
    __m128i e23 = _mm_add_epi32(_mm_madd_epi16(a, PM_PAIR(8192, -10033)), _mm_madd_epi16(b, PM_PAIR(5793, 1024)));
    __m128i o23 = _mm_add_epi32(_mm_madd_epi16(c, PM_PAIR(2998, -8192)), _mm_madd_epi16(d, PM_PAIR(11190, 0)));
    __m128i e14 = _mm_add_epi32(_mm_madd_epi16(a, PM_PAIR(8192, 0)), _mm_madd_epi16(b, PM_PAIR(-11586, 1024)));
    __m128i o14 = _mm_add_epi32(_mm_madd_epi16(c, PM_PAIR(8192, -8192)), _mm_madd_epi16(d, PM_PAIR(-8192, 0)));
    r[0] = _mm_srai_epi32(_mm_add_epi32(e05, o05), 11);
    r[5] = _mm_srai_epi32(_mm_sub_epi32(e05, o05), 11);
    r[2] = _mm_srai_epi32(_mm_add_epi32(e23, o23), 11);
    r[3] = _mm_srai_epi32(_mm_sub_epi32(e23, o23), 11);
    r[1] = _mm_srai_epi32(_mm_add_epi32(e14, o14), 11);
    r[4] = _mm_srai_epi32(_mm_sub_epi32(e14, o14), 11);
}

static void pm_jpeg_idct_6x6(j_decompress_ptr cinfo, jpeg_component_info *compptr, JCOEFPTR coef,
                             JSAMPARRAY out, JDIMENSION col) {
    (void)cinfo;
    const short *q = (const short *)compptr->dct_table;
    __m128i x[6];
    for (int i = 0; i < 6; i++)
        x[i] = _mm_mullo_epi16(_mm_loadu_si128((const __m128i *)(coef + 8 * i)), _mm_loadu_si128((const __m128i *)(q + 8 * i)));
    const __m128i one = _mm_set1_epi16(1), zero = _mm_setzero_si128();
    __m128i left[6], right[6], rows[6];
    pm_jpeg_idct_6_columns(_mm_unpacklo_epi16(x[0], x[2]), _mm_unpacklo_epi16(x[4], one), _mm_unpacklo_epi16(x[1], x[3]),
                           _mm_unpacklo_epi16(x[5], zero), left);
    pm_jpeg_idct_6_columns(_mm_unpackhi_epi16(x[0], x[2]), _mm_unpackhi_epi16(x[4], one), _mm_unpackhi_epi16(x[1], x[3]),
                           _mm_unpackhi_epi16(x[5], zero), right);
    for (int r = 0; r < 6; r++) rows[r] = _mm_packs_epi32(left[r], right[r]);  /* row r: w0..w5 as 16 bits */
    /* Pass 2: lane k of `lo` makes output column k (0..3), of `hi` column 4 + k (0..1), from
       the row's pairs (w0, w1), (w2, w3), (w4, w5): the table above, by output column. */
    const __m128i k01lo = _mm_set_epi16(-2998, 8192, 2998, 8192, 8192, 8192, 11190, 8192);
    const __m128i k23lo = _mm_set_epi16(8192, -10033, -8192, -10033, -8192, 0, 8192, 10033);
    const __m128i k45lo = _mm_set_epi16(-11190, 5793, 11190, 5793, -8192, -11586, 2998, 5793);
    const __m128i k01hi = _mm_set_epi16(0, 0, 0, 0, -11190, 8192, -8192, 8192);
    const __m128i k23hi = _mm_set_epi16(0, 0, 0, 0, -8192, 10033, 8192, 0);
    const __m128i k45hi = _mm_set_epi16(0, 0, 0, 0, -2998, 5793, 8192, -11586);
    const __m128i centre = _mm_set1_epi32(4112 * 8192);  /* as in the 3x3 */
    for (int r = 0; r < 6; r++) {
        __m128i p01 = _mm_shuffle_epi32(rows[r], 0x00), p23 = _mm_shuffle_epi32(rows[r], 0x55), p45 = _mm_shuffle_epi32(rows[r], 0xAA);
        __m128i lo = _mm_add_epi32(_mm_add_epi32(_mm_madd_epi16(p01, k01lo), _mm_madd_epi16(p23, k23lo)),
                                   _mm_add_epi32(_mm_madd_epi16(p45, k45lo), centre));
        __m128i hi = _mm_add_epi32(_mm_add_epi32(_mm_madd_epi16(p01, k01hi), _mm_madd_epi16(p23, k23hi)),
                                   _mm_add_epi32(_mm_madd_epi16(p45, k45hi), centre));
        __m128i w = _mm_packs_epi32(_mm_srai_epi32(lo, 18), _mm_srai_epi32(hi, 18));
        unsigned char v[16];
        _mm_storeu_si128((__m128i *)v, _mm_packus_epi16(w, w));
        memcpy(out[r] + col, v, 6);
    }
}
#undef PM_PAIR
#endif

/* After jpeg_start_decompress: the components it replaced libjpeg's 3x3 or 6x6 for. */
static inline int pm_jpeg_idct_install(j_decompress_ptr cinfo) {
    int replaced = 0;
#if defined(__SSE2__)
    for (int ci = 0; ci < cinfo->num_components; ci++) {
        jpeg_component_info *comp = &cinfo->comp_info[ci];
        inverse_DCT_method_ptr libjpeg = cinfo->idct->inverse_DCT[ci];
        inverse_DCT_method_ptr own = libjpeg == jpeg_idct_3x3 ? pm_jpeg_idct_3x3 : libjpeg == jpeg_idct_6x6 ? pm_jpeg_idct_6x6 : NULL;
        if (!own || !comp->quant_table || !comp->dct_table) continue;
        /* A SIMD build keeps 16-bit multipliers (jmorecfg.h); anything else keeps libjpeg's. */
        const short *table = (const short *)comp->dct_table;
        int shorts = 1;
        for (int i = 0; i < DCTSIZE2 && shorts; i++) shorts = table[i] == (short)comp->quant_table->quantval[i];
        if (!shorts) continue;
        cinfo->idct->inverse_DCT[ci] = own;
        replaced++;
    }
#else
    (void)cinfo;
#endif
    return replaced;
}
