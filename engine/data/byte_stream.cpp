// ByteStream: plain reads, zlib's gzip reader and zstd's streaming decoder behind one read().
#include "data/byte_stream.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace trainbench {
namespace {

class PlainStream : public ByteStream {
public:
    explicit PlainStream(std::FILE* file) : file_(file) {}
    ~PlainStream() override { std::fclose(file_); }
    size_t read(char* out, size_t capacity) override {
        const size_t got = std::fread(out, 1, capacity, file_);
        if (got == 0 && std::ferror(file_)) throw ByteStreamError(std::string("read failed: ") + std::strerror(errno));
        return got;
    }
    const char* encoding() const override { return "plain"; }

private:
    std::FILE* file_;
};

// zlib's gz reader: every gzip member of the file in turn (as `zcat` reads them).
class GzipStream : public ByteStream {
public:
    explicit GzipStream(gzFile file) : file_(file) { gzbuffer(file_, 1 << 20); }
    ~GzipStream() override { gzclose(file_); }
    size_t read(char* out, size_t capacity) override {
        const unsigned ask = static_cast<unsigned>(std::min<size_t>(capacity, 1u << 30));
        const int got = gzread(file_, out, ask);
        int code = Z_OK;
        const char* message = gzerror(file_, &code);
        // A stream cut short reads as far as it goes, then reports Z_BUF_ERROR ("unexpected end
        // of file"): the data up to there is not the file's whole content.
        if (got < 0 || (code != Z_OK && code != Z_STREAM_END))
            throw ByteStreamError(std::string("gzip: ") + (message && *message ? message : "corrupt stream") +
                                  (code == Z_BUF_ERROR ? " (the file is truncated)" : ""));
        return static_cast<size_t>(got);
    }
    const char* encoding() const override { return "gzip"; }

private:
    gzFile file_;
};

class ZstdStream : public ByteStream {
public:
    explicit ZstdStream(std::FILE* file) : file_(file), stream_(ZSTD_createDStream()), input_(ZSTD_DStreamInSize()) {
        if (!stream_) throw ByteStreamError("zstd: out of memory");
        ZSTD_initDStream(stream_);
    }
    ~ZstdStream() override {
        ZSTD_freeDStream(stream_);
        std::fclose(file_);
    }
    size_t read(char* out, size_t capacity) override {
        ZSTD_outBuffer output{out, capacity, 0};
        while (output.pos == 0) {
            if (in_.pos == in_.size && !holds_more_) {
                const size_t got = std::fread(input_.data(), 1, input_.size(), file_);
                if (got == 0) {
                    if (std::ferror(file_)) throw ByteStreamError(std::string("read failed: ") + std::strerror(errno));
                    // The decoder's last answer was not "frame complete": the file ends mid-frame.
                    if (pending_ != 0) throw ByteStreamError("zstd: the stream ends inside a frame (the file is truncated)");
                    return 0;
                }
                in_ = ZSTD_inBuffer{input_.data(), got, 0};
            }
            pending_ = ZSTD_decompressStream(stream_, &output, &in_);
            if (ZSTD_isError(pending_)) throw ByteStreamError(std::string("zstd: ") + ZSTD_getErrorName(pending_));
            // A full output buffer may leave decoded bytes inside the decoder: the next read
            // drains them before it reads more of the file.
            holds_more_ = output.pos == output.size;
        }
        return output.pos;
    }
    const char* encoding() const override { return "zstd"; }

private:
    std::FILE* file_;
    ZSTD_DStream* stream_;
    std::vector<char> input_;
    ZSTD_inBuffer in_{nullptr, 0, 0};
    size_t pending_ = 0;
    bool holds_more_ = false;
};

}  // namespace

std::unique_ptr<ByteStream> openByteStream(const std::filesystem::path& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) throw ByteStreamError(std::string("cannot open: ") + std::strerror(errno));
    unsigned char magic[4] = {};
    const size_t got = std::fread(magic, 1, sizeof magic, file);
    const bool gzip = got >= 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    const bool zstd = got == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd;
    if (gzip) {
        std::fclose(file);
        gzFile gz = gzopen(path.c_str(), "rb");
        if (!gz) throw ByteStreamError(std::string("cannot open: ") + std::strerror(errno));
        return std::make_unique<GzipStream>(gz);
    }
    std::rewind(file);
    if (zstd) return std::make_unique<ZstdStream>(file);
    return std::make_unique<PlainStream>(file);
}

}  // namespace trainbench
