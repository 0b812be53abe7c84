#pragma once
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic: one wrapper per argument type. */
static inline CURLcode pm_curl_set_long(CURL *c, CURLoption o, long v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode pm_curl_set_string(CURL *c, CURLoption o, const char *v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode pm_curl_set_pointer(CURL *c, CURLoption o, void *v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode pm_curl_set_off(CURL *c, CURLoption o, curl_off_t v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode pm_curl_set_slist(CURL *c, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(c, o, v); }

typedef size_t (*pm_curl_data_fn)(char *ptr, size_t size, size_t nmemb, void *userdata);
static inline CURLcode pm_curl_set_write(CURL *c, pm_curl_data_fn f, void *data) {
    CURLcode rc = curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, f);
    return rc ? rc : curl_easy_setopt(c, CURLOPT_WRITEDATA, data);
}
static inline CURLcode pm_curl_set_read(CURL *c, pm_curl_data_fn f, void *data) {
    CURLcode rc = curl_easy_setopt(c, CURLOPT_READFUNCTION, f);
    return rc ? rc : curl_easy_setopt(c, CURLOPT_READDATA, data);
}
static inline CURLcode pm_curl_set_header_fn(CURL *c, pm_curl_data_fn f, void *data) {
    CURLcode rc = curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, f);
    return rc ? rc : curl_easy_setopt(c, CURLOPT_HEADERDATA, data);
}
static inline long pm_curl_status(CURL *c) { long code = 0; curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code); return code; }
