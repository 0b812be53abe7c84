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

/* CURLOPT_OPENSOCKETFUNCTION, so a caller can refuse an address before curl connects
   to it (a user's webhook must not reach loopback or private hosts, whatever the name
   resolved to); and the address as text for that check. */
#include <arpa/inet.h>
#include <sys/socket.h>
static inline CURLcode pm_curl_set_opensocket(CURL *c, curl_opensocket_callback f, void *data) {
    CURLcode rc = curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, f);
    return rc ? rc : curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, data);
}
static inline int pm_curl_address_text(const struct curl_sockaddr *a, char *buf, socklen_t len) {
    const void *p = a->family == AF_INET ? (const void *)&((const struct sockaddr_in *)&a->addr)->sin_addr
        : a->family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)&a->addr)->sin6_addr : 0;
    return p && inet_ntop(a->family, p, buf, len) ? 0 : -1;
}
/* The host curl will connect to, parsed by curl itself (no second parser to disagree
   with); the caller frees it with curl_free. */
static inline char *pm_curl_url_host(const char *url) {
    CURLU *u = curl_url();
    char *host = 0;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) curl_url_get(u, CURLUPART_HOST, &host, 0);
    curl_url_cleanup(u);
    return host;
}
