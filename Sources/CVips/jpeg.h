#pragma once
#include <stdio.h>
#include <setjmp.h>
/* jpegint.h too: pm_jpeg_encode replaces the entropy encoder's statistics methods (jpeg_gather.h). */
#define JPEG_INTERNALS
#include <jpeglib.h>
#include "shim.h"
#include "jpeg_gather.h"
#include "jpeg_idct.h"
#include "jpeg_huffman.h"

/* libjpeg-turbo straight into an in-memory libvips image, for compress's JPEG path:
   libvips' jpegload adds its read buffer, a sequential line cache and a copy to memory on
   top of the same decode. libjpeg reports errors by longjmp, which Swift cannot catch, so
   the whole decode is this one C function. A warning (damaged or truncated data) fails
   the decode, as libvips' fail_on=warning does. */

struct pm_jpeg_error {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

static void pm_jpeg_error_exit(j_common_ptr c) {
    struct pm_jpeg_error *e = (struct pm_jpeg_error *)c->err;
    c->err->format_message(c, e->message);
    longjmp(e->jump, 1);
}

static void pm_jpeg_emit_message(j_common_ptr c, int level) {
    if (level < 0) pm_jpeg_error_exit(c);  /* a warning: the data is damaged */
}

/* What pm_jpeg_decode may do its own way, and (`used`) did: jpeg_idct.h's 3/8-scale inverse
   DCTs (for how many components), jpeg_huffman.h's Huffman decoding (1 if it ran). Tests
   compare both with libjpeg's. */
enum { PM_JPEG_OWN_IDCT = 1, PM_JPEG_OWN_HUFFMAN = 2 };
struct pm_jpeg_own {
    int idct, huffman;
};

/* 0: *out holds the pixels at eighths/8 scale (1..8; sides rounded up), with `like`'s
   metadata (the header image). 1: not a gray or YCbCr/RGB JPEG (CMYK, ...): use libvips.
   -1: damaged, `message` says why. `own`: PM_JPEG_OWN_ flags; `used` may be NULL. */
static inline int pm_jpeg_decode(const void *buf, size_t len, int eighths, int own, struct pm_jpeg_own *used, VipsImage *like,
                                 VipsImage **out, char *message, size_t message_len) {
    struct jpeg_decompress_struct cinfo;
    struct pm_jpeg_error err;
    VipsImage *volatile image = NULL;
    cinfo.client_data = NULL; /* jpeg_create_decompress keeps it; jpeg_huffman.h's state goes there */
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = pm_jpeg_error_exit;
    err.mgr.emit_message = pm_jpeg_emit_message;
    if (setjmp(err.jump)) {
        snprintf(message, message_len, "%s", err.message);
        jpeg_destroy_decompress(&cinfo);
        if (image) g_object_unref(image);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, (const unsigned char *)buf, (unsigned long)len);
    jpeg_read_header(&cinfo, TRUE);
    int bands = vips_image_get_bands(like);
    if (cinfo.num_components == 3 && bands == 3 && (cinfo.jpeg_color_space == JCS_YCbCr || cinfo.jpeg_color_space == JCS_RGB)) {
        cinfo.out_color_space = JCS_RGB;
    } else if (cinfo.num_components == 1 && bands == 1) {
        cinfo.out_color_space = JCS_GRAYSCALE;
    } else {
        jpeg_destroy_decompress(&cinfo);
        return 1;
    }
    cinfo.scale_num = (unsigned int)eighths;
    cinfo.scale_denom = 8;
    /* Merged upsampling: chroma upsampled with the colour conversion in one SIMD pass
       (~8% of the decode); the difference is gone after the resize to rendition size. */
    cinfo.do_fancy_upsampling = FALSE;
    jpeg_start_decompress(&cinfo);
    struct pm_jpeg_own did = {own & PM_JPEG_OWN_IDCT ? pm_jpeg_idct_install(&cinfo) : 0,
                              own & PM_JPEG_OWN_HUFFMAN ? pm_huff_install(&cinfo) : 0};
    if (used) *used = did;
    image = pm_vips_new_memory_like(like, (int)cinfo.output_width, (int)cinfo.output_height);
    if (!image) {
        snprintf(message, message_len, "cannot allocate %ux%u pixels", cinfo.output_width, cinfo.output_height);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW rows[4];
        int n = 0;
        for (; n < 4 && cinfo.output_scanline + n < cinfo.output_height; n++)
            rows[n] = VIPS_IMAGE_ADDR(image, 0, cinfo.output_scanline + n);
        jpeg_read_scanlines(&cinfo, rows, (JDIMENSION)n);
    }
    jpeg_finish_decompress(&cinfo);  /* reads to the end-of-image marker: truncation shows here */
    jpeg_destroy_decompress(&cinfo);
    *out = image;
    return 0;
}

/* libjpeg-turbo straight from an in-memory 8-bit image (1 or 3 bands) to a JPEG in memory:
   what libvips' jpegsave writes with strip, optimize_coding and 4:2:0 (the same library
   and settings: the same bytes), without its pipeline and worker threads for a copy, and
   with optimize_coding's statistics counted by jpeg_gather.h (the same tables, in half
   the encode's time). 0: *out (malloc'd: free it) holds *len bytes. -1: `message`. */
static inline int pm_jpeg_encode(VipsImage *image, int quality, unsigned char **out, unsigned long *len,
                                 char *message, size_t message_len) {
    struct jpeg_compress_struct cinfo;
    struct pm_jpeg_error err;
    struct pm_jpeg_gather gather;
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = pm_jpeg_error_exit;
    *out = NULL;
    *len = 0;
    if (setjmp(err.jump)) {
        snprintf(message, message_len, "%s", err.message);
        jpeg_destroy_compress(&cinfo);
        free(*out);  /* the destination's current buffer, if it made one */
        *out = NULL;
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, out, len);
    cinfo.image_width = (JDIMENSION)vips_image_get_width(image);
    cinfo.image_height = (JDIMENSION)vips_image_get_height(image);
    cinfo.input_components = vips_image_get_bands(image);
    cinfo.in_color_space = cinfo.input_components == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&cinfo);  /* YCbCr with 2x2 luma sampling: 4:2:0 */
    jpeg_set_quality(&cinfo, quality, TRUE);
    cinfo.optimize_coding = TRUE;
    cinfo.write_JFIF_header = FALSE;  /* stripped: as libvips, not even JFIF's APP0 */
    jpeg_start_compress(&cinfo, TRUE);
    pm_jpeg_gather_install(&cinfo, &gather);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = VIPS_IMAGE_ADDR(image, 0, cinfo.next_scanline);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    return 0;
}
