#include "CCurlShims.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

CURLcode imgfs_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
CURLcode imgfs_easy_setopt_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}
CURLcode imgfs_easy_setopt_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}
CURLcode imgfs_easy_setopt_data_callback(CURL *easy, CURLoption option, imgfs_curl_data_callback callback) {
    return curl_easy_setopt(easy, option, callback);
}

CURLcode imgfs_easy_setopt_prereq_callback(CURL *easy, imgfs_curl_prereq_callback callback, void *context) {
    CURLcode result = curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, callback);
    if (result != CURLE_OK) return result;
    return curl_easy_setopt(easy, CURLOPT_PREREQDATA, context);
}

CURLcode imgfs_easy_setopt_resolver_start(CURL *easy, imgfs_curl_resolver_start_callback callback, void *context) {
    CURLcode result = curl_easy_setopt(easy, CURLOPT_RESOLVER_START_FUNCTION, callback);
    if (result != CURLE_OK) return result;
    return curl_easy_setopt(easy, CURLOPT_RESOLVER_START_DATA, context);
}

CURLcode imgfs_easy_getinfo_string(CURL *easy, CURLINFO info, const char **value) {
    return curl_easy_getinfo(easy, info, value);
}

CURLcode imgfs_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

CURLMcode imgfs_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

CURLcode imgfs_easy_resume(CURL *easy) { return curl_easy_pause(easy, CURLPAUSE_CONT); }

int imgfs_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result) {
    int queued = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(multi, &queued)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *easy = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

curl_socket_t imgfs_open_socket(struct curl_sockaddr *address) {
    return socket(address->family, address->socktype, address->protocol);
}

CURLcode imgfs_easy_setopt_opensocket(CURL *easy, imgfs_curl_opensocket_callback callback, void *context) {
    CURLcode result = curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, callback);
    if (result != CURLE_OK) return result;
    return curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, context);
}

int imgfs_sockaddr_text(const struct curl_sockaddr *address, char *buffer, size_t size) {
    const void *bytes;
    if (address->family == AF_INET && address->addrlen >= sizeof(struct sockaddr_in)) {
        bytes = &((const struct sockaddr_in *)&address->addr)->sin_addr;
    } else if (address->family == AF_INET6 && address->addrlen >= sizeof(struct sockaddr_in6)) {
        bytes = &((const struct sockaddr_in6 *)&address->addr)->sin6_addr;
    } else {
        return -1;
    }
    return inet_ntop(address->family, bytes, buffer, (socklen_t)size) ? 0 : -1;
}

int imgfs_url_host(const char *url, char *buffer, size_t size) {
    CURLU *handle = curl_url();
    if (!handle) return -1;
    char *host = NULL;
    int result = -1;
    if (curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK
        && curl_url_get(handle, CURLUPART_HOST, &host, CURLU_URLDECODE) == CURLUE_OK && host
        && strlen(host) < size) {
        strcpy(buffer, host);
        result = 0;
    }
    curl_free(host);
    curl_url_cleanup(handle);
    return result;
}
