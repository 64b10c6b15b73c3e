// Content-Encoding decoders that report whether the compressed stream reached its end: libcurl 7.88 accepts a gzip
// stream cut before its trailer as a complete body.
#include "CCurlShims.h"
#include <brotli/decode.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct imgfs_decoder {
    int kind;
    int finished;
    int failed;
    int raw_tried;      // deflate: fell back to a raw deflate stream (no zlib header), as some servers send
    size_t consumed;    // input bytes taken so far
    z_stream zlib;
    BrotliDecoderState *brotli;
};

enum { OUTPUT_SIZE = 64 * 1024 };

static int zlib_start(imgfs_decoder *decoder, int window_bits) {
    memset(&decoder->zlib, 0, sizeof decoder->zlib);
    return inflateInit2(&decoder->zlib, window_bits) == Z_OK;
}

imgfs_decoder *imgfs_decoder_create(int kind) {
    imgfs_decoder *decoder = calloc(1, sizeof *decoder);
    if (!decoder) return NULL;
    decoder->kind = kind;
    int ok = 0;
    switch (kind) {
    case IMGFS_DECODER_GZIP: ok = zlib_start(decoder, 16 + MAX_WBITS); break;
    case IMGFS_DECODER_DEFLATE: ok = zlib_start(decoder, MAX_WBITS); break;
    case IMGFS_DECODER_BROTLI: ok = (decoder->brotli = BrotliDecoderCreateInstance(NULL, NULL, NULL)) != NULL; break;
    }
    if (!ok) {
        free(decoder);
        return NULL;
    }
    return decoder;
}

static int feed_zlib(imgfs_decoder *decoder, const unsigned char *data, size_t count, imgfs_decoder_output output,
                     void *context) {
    unsigned char buffer[OUTPUT_SIZE];
    z_stream *stream = &decoder->zlib;
    stream->next_in = (unsigned char *)data;
    stream->avail_in = (uInt)count;
    while (stream->avail_in > 0) {
        if (decoder->finished) return -1;  // bytes after the end of the stream
        stream->next_out = buffer;
        stream->avail_out = sizeof buffer;
        uInt before = stream->avail_in;
        int result = inflate(stream, Z_NO_FLUSH);
        decoder->consumed += before - stream->avail_in;
        if (result == Z_DATA_ERROR && decoder->kind == IMGFS_DECODER_DEFLATE && !decoder->raw_tried
            && stream->total_out == 0 && decoder->consumed <= count) {
            // Not a zlib stream: try raw deflate from the start of this (first) piece.
            inflateEnd(stream);
            decoder->raw_tried = 1;
            decoder->consumed = 0;
            if (!zlib_start(decoder, -MAX_WBITS)) return -1;
            return feed_zlib(decoder, data, count, output, context);
        }
        if (result != Z_OK && result != Z_STREAM_END && result != Z_BUF_ERROR) return -1;
        size_t produced = sizeof buffer - stream->avail_out;
        if (produced > 0 && !output(context, buffer, produced)) return -1;
        if (result == Z_STREAM_END) decoder->finished = 1;
        else if (result == Z_BUF_ERROR && produced == 0) break;
    }
    return decoder->finished;
}

static int feed_brotli(imgfs_decoder *decoder, const unsigned char *data, size_t count, imgfs_decoder_output output,
                       void *context) {
    unsigned char buffer[OUTPUT_SIZE];
    const uint8_t *next_in = data;
    size_t available_in = count;
    for (;;) {
        if (decoder->finished) return available_in > 0 ? -1 : 1;
        uint8_t *next_out = buffer;
        size_t available_out = sizeof buffer;
        BrotliDecoderResult result = BrotliDecoderDecompressStream(decoder->brotli, &available_in, &next_in,
                                                                   &available_out, &next_out, NULL);
        size_t produced = sizeof buffer - available_out;
        if (produced > 0 && !output(context, buffer, produced)) return -1;
        switch (result) {
        case BROTLI_DECODER_RESULT_SUCCESS: decoder->finished = 1; break;
        case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: break;
        case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT: return 0;
        default: return -1;
        }
    }
}

int imgfs_decoder_feed(imgfs_decoder *decoder, const void *data, size_t count, imgfs_decoder_output output,
                       void *context) {
    if (decoder->failed) return -1;
    int result = decoder->kind == IMGFS_DECODER_BROTLI ? feed_brotli(decoder, data, count, output, context)
                                                       : feed_zlib(decoder, data, count, output, context);
    if (result < 0) decoder->failed = 1;
    return result;
}

int imgfs_decoder_finished(const imgfs_decoder *decoder) {
    return decoder->finished && !decoder->failed;
}

void imgfs_decoder_free(imgfs_decoder *decoder) {
    if (!decoder) return;
    if (decoder->kind == IMGFS_DECODER_BROTLI) {
        BrotliDecoderDestroyInstance(decoder->brotli);
    } else {
        inflateEnd(&decoder->zlib);
    }
    free(decoder);
}
