#pragma once
#include <libde265/de265.h>

/* libde265 (HEVC) for compress's HEIF path: one decoder per photo, reused across its grid
   tiles. The API has no variadic calls; this header only names the library. */
