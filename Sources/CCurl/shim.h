// libcurl's public API. Its variadic setters (curl_easy_setopt, curl_easy_getinfo, curl_multi_setopt) cannot be
// called from Swift: CCurlShims wraps them with one typed function per argument kind.
#include <curl/curl.h>
