#ifndef IMGFS_CCURLSHIMS_H
#define IMGFS_CCURLSHIMS_H
// Typed wrappers for libcurl's variadic functions, one per argument kind, so Swift can call them.
#include <curl/curl.h>
#include <stddef.h>

typedef size_t (*imgfs_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef curl_socket_t (*imgfs_curl_opensocket_callback)(void *context, curlsocktype purpose,
                                                         struct curl_sockaddr *address);

CURLcode imgfs_easy_setopt_long(CURL *easy, CURLoption option, long value);
CURLcode imgfs_easy_setopt_pointer(CURL *easy, CURLoption option, void *value);
CURLcode imgfs_easy_setopt_string(CURL *easy, CURLoption option, const char *value);
CURLcode imgfs_easy_setopt_data_callback(CURL *easy, CURLoption option, imgfs_curl_data_callback callback);

/// Called after a connection is made (or reused) and before each request is sent, redirects included.
typedef int (*imgfs_curl_prereq_callback)(void *context, char *primary_ip, char *local_ip, int primary_port,
                                          int local_port);
CURLcode imgfs_easy_setopt_prereq_callback(CURL *easy, imgfs_curl_prereq_callback callback, void *context);
/// Called before curl resolves a host name (for the first request and every redirect); non-zero aborts the transfer.
typedef int (*imgfs_curl_resolver_start_callback)(void *resolver_state, void *reserved, void *context);
CURLcode imgfs_easy_setopt_resolver_start(CURL *easy, imgfs_curl_resolver_start_callback callback, void *context);

CURLcode imgfs_easy_getinfo_string(CURL *easy, CURLINFO info, const char **value);
CURLcode imgfs_easy_getinfo_long(CURL *easy, CURLINFO info, long *value);
CURLMcode imgfs_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

/// What a write callback returns to pause its transfer (CURL_WRITEFUNC_PAUSE).
static const size_t IMGFS_CURL_WRITEFUNC_PAUSE = CURL_WRITEFUNC_PAUSE;
/// Resumes a transfer its write callback paused (curl_easy_pause with CURLPAUSE_CONT, a macro Swift cannot see); the
/// write callback may be called with the bytes curl held before this returns. Call it outside curl's callbacks.
CURLcode imgfs_easy_resume(CURL *easy);

/// The easy handle and result of a CURLMSG_DONE message (the union member cannot be read from Swift).
int imgfs_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result);

/// Opens a socket the way libcurl would, for an opensocket callback that has inspected the address.
curl_socket_t imgfs_open_socket(struct curl_sockaddr *address);
/// Sets CURLOPT_OPENSOCKETFUNCTION and its CURLOPT_OPENSOCKETDATA.
CURLcode imgfs_easy_setopt_opensocket(CURL *easy, imgfs_curl_opensocket_callback callback, void *context);
/// The numeric text of an IPv4 or IPv6 socket address (inet_ntop) into `buffer`; 0 on success, -1 otherwise.
int imgfs_sockaddr_text(const struct curl_sockaddr *address, char *buffer, size_t size);
/// The host of `url` as libcurl's own URL parser reads it (the host it connects to, percent-decoded), into `buffer`;
/// 0 on success, -1 when the URL does not parse or the host does not fit.
int imgfs_url_host(const char *url, char *buffer, size_t size);

/// A decoder of one Content-Encoding (gzip, deflate, br) that knows whether its stream reached its end.
typedef struct imgfs_decoder imgfs_decoder;
/// Receives decoded bytes; returns 0 to stop decoding.
typedef int (*imgfs_decoder_output)(void *context, const void *data, size_t count);
enum { IMGFS_DECODER_GZIP = 1, IMGFS_DECODER_DEFLATE = 2, IMGFS_DECODER_BROTLI = 3 };
/// A decoder for `kind` (IMGFS_DECODER_*), or NULL.
imgfs_decoder *imgfs_decoder_create(int kind);
/// Decodes `count` bytes, handing the output to `output`. Returns 0 while the stream goes on, 1 when it reached its
/// end (bytes after the end are an error), -1 on corrupt data or when `output` stopped.
int imgfs_decoder_feed(imgfs_decoder *decoder, const void *data, size_t count, imgfs_decoder_output output,
                       void *context);
/// Whether the stream reached its end (the gzip trailer, the end of the zlib or brotli stream) and nothing followed.
int imgfs_decoder_finished(const imgfs_decoder *decoder);
void imgfs_decoder_free(imgfs_decoder *decoder);

#endif
