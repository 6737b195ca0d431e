#ifndef FERRY_CCURL_SHIM_H
#define FERRY_CCURL_SHIM_H
// libcurl's setters are variadic (`curl_easy_setopt(handle, option, ...)`), which Swift cannot call. These typed
// wrappers are the whole bridge: one per argument type, plus the callback types Ferry installs.
#include <curl/curl.h>

static inline CURLcode ferry_easy_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_easy_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_easy_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_easy_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_easy_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
/// A blob option (CURLOPT_CAINFO_BLOB): libcurl copies the bytes.
static inline CURLcode ferry_easy_blob(CURL *h, CURLoption o, const void *data, size_t len) {
    struct curl_blob blob = {(void *)data, len, CURL_BLOB_COPY};
    return curl_easy_setopt(h, o, &blob);
}

typedef size_t (*ferry_data_cb)(char *data, size_t size, size_t count, void *user);
typedef int (*ferry_xferinfo_cb)(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);
static inline CURLcode ferry_easy_write_cb(CURL *h, ferry_data_cb f) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f); }
static inline CURLcode ferry_easy_header_cb(CURL *h, ferry_data_cb f) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, f); }
static inline CURLcode ferry_easy_read_cb(CURL *h, ferry_data_cb f) { return curl_easy_setopt(h, CURLOPT_READFUNCTION, f); }
typedef int (*ferry_seek_cb)(void *user, curl_off_t offset, int origin);
static inline CURLcode ferry_easy_seek_cb(CURL *h, ferry_seek_cb f) { return curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, f); }
static inline CURLcode ferry_easy_xferinfo_cb(CURL *h, ferry_xferinfo_cb f) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f); }

static inline long ferry_info_long(CURL *h, CURLINFO i) { long v = 0; curl_easy_getinfo(h, i, &v); return v; }
static inline double ferry_info_double(CURL *h, CURLINFO i) { double v = 0; curl_easy_getinfo(h, i, &v); return v; }
static inline curl_off_t ferry_info_off(CURL *h, CURLINFO i) { curl_off_t v = 0; curl_easy_getinfo(h, i, &v); return v; }
static inline const char *ferry_info_str(CURL *h, CURLINFO i) { char *v = 0; curl_easy_getinfo(h, i, &v); return v; }
static inline void *ferry_info_private(CURL *h) { char *v = 0; curl_easy_getinfo(h, CURLINFO_PRIVATE, &v); return v; }

typedef int (*ferry_socket_cb)(CURL *easy, curl_socket_t s, int what, void *user, void *socketp);
typedef int (*ferry_timer_cb)(CURLM *multi, long timeout_ms, void *user);
static inline CURLMcode ferry_multi_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ferry_multi_ptr(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ferry_multi_socket_cb(CURLM *m, ferry_socket_cb f) { return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f); }
static inline CURLMcode ferry_multi_timer_cb(CURLM *m, ferry_timer_cb f) { return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f); }

/// The features of the libcurl in use (CURL_VERSION_BROTLI, CURL_VERSION_ZSTD, …): `CURLVERSION_NOW` is a macro.
static inline int ferry_curl_features(void) { return curl_version_info(CURLVERSION_NOW)->features; }
static inline int ferry_curl_has_brotli(void) { return (ferry_curl_features() & CURL_VERSION_BROTLI) != 0; }
static inline int ferry_curl_has_zstd(void) { return (ferry_curl_features() & CURL_VERSION_ZSTD) != 0; }

/// The finished transfer a CURLMSG_DONE message carries, and its result (a union member in C).
static inline CURL *ferry_msg_easy(CURLMsg *m) { return m->easy_handle; }
static inline CURLcode ferry_msg_result(CURLMsg *m) { return m->data.result; }
static inline int ferry_msg_is_done(CURLMsg *m) { return m->msg == CURLMSG_DONE; }
#endif
