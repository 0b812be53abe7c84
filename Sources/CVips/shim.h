#pragma once
#include <vips/vips.h>

/* Swift cannot call C variadic functions: one static inline wrapper per call we make,
   with the options spelled out. */

static inline int pm_vips_init(const char *argv0) {
    if (VIPS_INIT(argv0)) return -1;
    vips_concurrency_set(1);      /* one thread per photo; photos run in parallel instead */
    vips_cache_set_max(0);        /* a daemon sees each photo once */
    vips_block_untrusted_set(TRUE);
    return 0;
}

/* Photos are decoded from memory, never opened by file name: libvips reads "[...]" in a
   name as load options ("t.jpg[]" loads t.jpg, "[n=-1]" loads every page). The buffer
   must outlive the image (libvips does not copy it). */

/* Any loader by content, sequential, failing on warnings (damage shows as warnings).
   An empty option string: nothing in it to parse. */
static inline VipsImage *pm_vips_open_buffer(const void *buf, size_t len) {
    return vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_WARNING, NULL);
}

/* JPEG with a DCT shrink-on-load factor (1, 2, 4 or 8). */
static inline int pm_vips_jpegload_buffer(const void *buf, size_t len, int shrink, VipsImage **out) {
    return vips_jpegload_buffer((void *)buf, len, out, "shrink", shrink, "access", VIPS_ACCESS_SEQUENTIAL,
                                "fail_on", VIPS_FAIL_ON_WARNING, NULL);
}

/* An in-memory image with `like`'s bands, format and metadata at a new size, pixels
   allocated (not set): the resampler fills them. */
static inline VipsImage *pm_vips_new_memory_like(VipsImage *like, int width, int height) {
    VipsImage *out = vips_image_new_memory();
    if (vips_image_pipelinev(out, VIPS_DEMAND_STYLE_ANY, like, NULL) == 0) {
        out->Xsize = width;
        out->Ysize = height;
        if (vips_image_write_prepare(out) == 0) return out;
    }
    g_object_unref(out);
    return NULL;
}

/* The pixels of an in-memory image, rows packed. */
static inline unsigned char *pm_vips_pixels(VipsImage *image) { return VIPS_IMAGE_ADDR(image, 0, 0); }

static inline int pm_vips_bands(VipsImage *image) { return vips_image_get_bands(image); }

/* After turning an image upright by hand: no orientation left for a viewer to apply, and
   a resolution that follows a quarter turn (as vips_autorot leaves them). */
static inline void pm_vips_set_upright(VipsImage *image, int swapped) {
    vips_autorot_remove_angle(image);
    if (swapped) { double x = image->Xres; image->Xres = image->Yres; image->Yres = x; }
}

static inline int pm_vips_icc_to_srgb(VipsImage *in, VipsImage **out) {
    return vips_icc_transform(in, out, "srgb", "embedded", TRUE, "intent", VIPS_INTENT_PERCEPTUAL, NULL);
}

static inline int pm_vips_colourspace_srgb(VipsImage *in, VipsImage **out) {
    return vips_colourspace(in, out, VIPS_INTERPRETATION_sRGB, NULL);
}

static inline int pm_vips_cast_uchar(VipsImage *in, VipsImage **out) {
    return vips_cast_uchar(in, out, NULL);
}

static inline int pm_vips_flatten_white(VipsImage *in, VipsImage **out) {
    double white[3] = {255.0, 255.0, 255.0};
    VipsArrayDouble *bg = vips_array_double_new(white, 3);
    int rc = vips_flatten(in, out, "background", bg, NULL);
    vips_area_unref(VIPS_AREA(bg));
    return rc;
}

/* A rectangle of an in-memory image copied row by row into a new one: a lazy
   vips_extract_area would be computed later through a pipeline and its worker thread, a
   handoff per strip (a thumbnail's crop cost ~3 ms of waiting for ~0.05 ms of copying). */
static inline int pm_vips_crop_memory(VipsImage *in, VipsImage **out, int left, int top, int width, int height) {
    if (left < 0 || top < 0 || width <= 0 || height <= 0 || width > in->Xsize - left || height > in->Ysize - top) {
        vips_error("crop", "%dx%d at %d,%d is outside the %dx%d image", width, height, left, top, in->Xsize, in->Ysize);
        return -1;
    }
    VipsImage *image = pm_vips_new_memory_like(in, width, height);
    if (!image) return -1;
    size_t row = (size_t)VIPS_IMAGE_SIZEOF_PEL(in) * (size_t)width;
    for (int y = 0; y < height; y++) memcpy(VIPS_IMAGE_ADDR(image, 0, y), VIPS_IMAGE_ADDR(in, left, top + y), row);
    *out = image;
    return 0;
}

static inline int pm_vips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int strip) {
    return vips_jpegsave_buffer(in, buf, len, "Q", quality, "optimize_coding", TRUE,
                                "subsample_mode", VIPS_FOREIGN_SUBSAMPLE_ON, "strip", strip, NULL);
}

static inline int pm_vips_webpsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int strip) {
    return vips_webpsave_buffer(in, buf, len, "Q", quality, "strip", strip, NULL);
}

/* For tests: an AVIF (AV1 in HEIF, written by libheif with libaom) of `in`. */
static inline int pm_vips_avifsave_buffer(VipsImage *in, void **buf, size_t *len) {
    return vips_heifsave_buffer(in, buf, len, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1, "Q", 60, NULL);
}

static inline int pm_vips_avg(VipsImage *in, double *out) {
    return vips_avg(in, out, NULL);
}

/* Mean absolute difference of two same-size images (tests compare pixels with it). */
static inline int pm_vips_mean_abs_diff(VipsImage *a, VipsImage *b, double *out) {
    VipsImage *d = NULL, *abs = NULL;
    int rc = vips_subtract(a, b, &d, NULL);
    if (rc == 0) rc = vips_abs(d, &abs, NULL);
    if (rc == 0) rc = vips_avg(abs, out, NULL);
    if (d) g_object_unref(d);
    if (abs) g_object_unref(abs);
    return rc;
}

static inline void pm_vips_unref(VipsImage *image) { if (image) g_object_unref(image); }

static inline int pm_vips_has_field(VipsImage *image, const char *name) {
    return vips_image_get_typeof(image, name) != 0;
}

static inline int pm_vips_has_alpha(VipsImage *image) { return vips_image_hasalpha(image); }

static inline const char *pm_vips_interpretation(VipsImage *image) {
    return vips_enum_nick(VIPS_TYPE_INTERPRETATION, vips_image_get_interpretation(image));
}

static inline int pm_vips_is_uchar(VipsImage *image) { return vips_image_get_format(image) == VIPS_FORMAT_UCHAR; }

/* The loader's name for a buffer's content ("jpegload_buffer", ...), or NULL. */
static inline const char *pm_vips_loader_buffer(const void *buf, size_t len) {
    const char *name = vips_foreign_find_load_buffer(buf, len);
    if (!name) return NULL;
    VipsObjectClass *class = VIPS_OBJECT_CLASS(g_type_class_ref(g_type_from_name(name)));
    return class ? class->nickname : name;
}

static inline void pm_vips_free(void *p) { g_free(p); }

static inline int pm_vips_extract_band(VipsImage *in, VipsImage **out, int band) {
    return vips_extract_band(in, out, band, NULL);
}

/* For the benchmark's corpus: a photo-like 8-bit sRGB JPEG (smooth colour waves plus
   sensor-like noise) carrying an EXIF orientation tag; progressive when `interlace`. */
static inline int pm_vips_synthetic_photo(const char *path, int width, int height, int orientation, int seed, int quality, int interlace) {
    VipsImage *xy = NULL, *x = NULL, *y = NULL, *diag = NULL, *colour = NULL;
    VipsImage *noise = NULL, *sum = NULL, *u = NULL, *tagged = NULL;
    VipsImage *bands[3] = {0};
    int rc = vips_xyz(&xy, width, height, NULL);
    if (rc == 0) rc = vips_extract_band(xy, &x, 0, NULL);
    if (rc == 0) rc = vips_extract_band(xy, &y, 1, NULL);
    if (rc == 0) rc = vips_add(x, y, &diag, NULL);
    for (int i = 0; i < 3 && rc == 0; i++) {
        VipsImage *angle = NULL, *wave = NULL;
        rc = vips_linear1(diag, &angle, 0.09 + 0.02 * i + 0.005 * seed, 37.0 * seed + 60.0 * i, NULL);
        if (rc == 0) rc = vips_math(angle, &wave, VIPS_OPERATION_MATH_SIN, NULL);  /* degrees */
        if (rc == 0) rc = vips_linear1(wave, &bands[i], 80.0, 128.0, NULL);
        if (angle) g_object_unref(angle);
        if (wave) g_object_unref(wave);
    }
    if (rc == 0) rc = vips_bandjoin(bands, &colour, 3, NULL);
    if (rc == 0) rc = vips_gaussnoise(&noise, width, height, "sigma", 7.0, "mean", 0.0, "seed", seed, NULL);
    if (rc == 0) rc = vips_add(colour, noise, &sum, NULL);
    if (rc == 0) rc = vips_cast(sum, &u, VIPS_FORMAT_UCHAR, NULL);
    if (rc == 0) rc = vips_copy(u, &tagged, "interpretation", VIPS_INTERPRETATION_sRGB, NULL);
    if (rc == 0) {
        vips_image_set_int(tagged, "orientation", orientation);
        rc = vips_jpegsave(tagged, path, "Q", quality, "interlace", interlace, NULL);
    }
    VipsImage *all[] = {xy, x, y, diag, colour, noise, sum, u, tagged, bands[0], bands[1], bands[2]};
    for (int i = 0; i < 12; i++) if (all[i]) g_object_unref(all[i]);
    return rc;
}

