// TokenCacheWriter: the ids streamed to the file, the starts and marks to side files joined on commit.
#include "data/token_cache_writer.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <vector>

#include "data/tokenized_documents.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

constexpr size_t kStreamBuffer = 1 << 20;

void appendFile(std::ofstream& out, const std::string& from) {
    std::ifstream in(from, std::ios::binary);
    std::vector<char> buffer(kStreamBuffer);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        out.write(buffer.data(), in.gcount());
    }
    if (in.bad()) throw std::runtime_error("cannot read back " + from);
}

}  // namespace

TokenCacheWriter::TokenCacheWriter(std::string path, uint32_t width, const Tokenizer* tokenizer, int32_t end_token,
                                   std::string fingerprint)
    : path_(std::move(path)), partial_(path_ + ".partial." + std::to_string(::getpid())), width_(width),
      tokenizer_(tokenizer), end_token_(end_token) {
    std::error_code error;
    fs::create_directories(fs::path(path_).parent_path(), error);
    header_.width = width;
    header_.fingerprint = std::move(fingerprint);
    // The header's size depends on the fingerprint only, so the ids can start at their place now.
    const std::string header = encodeTokenCacheHeader(header_);
    ids_.open(partial_, std::ios::binary | std::ios::trunc);
    starts_.open(partial_ + ".starts", std::ios::binary | std::ios::trunc);
    marks_.open(partial_ + ".marks", std::ios::binary | std::ios::trunc);
    if (!ids_ || !starts_ || !marks_) {
        removePartial();
        throw std::runtime_error("cannot create " + partial_ + " (check the token cache folder's permissions)");
    }
    ids_.write(header.data(), static_cast<std::streamsize>(header.size()));
    const int64_t zero = 0;
    starts_.write(reinterpret_cast<const char*>(&zero), sizeof zero);
}

TokenCacheWriter::~TokenCacheWriter() {
    if (job_.joinable()) job_.join();
    if (!committed_) removePartial();
}

void TokenCacheWriter::removePartial() {
    ids_.close();
    starts_.close();
    marks_.close();
    std::error_code error;
    for (const char* suffix : {"", ".starts", ".marks"}) fs::remove(partial_ + suffix, error);
}

void TokenCacheWriter::wait() {
    if (job_.joinable()) job_.join();
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void TokenCacheWriter::add(ByteChunk&& chunk) {
    wait();
    job_ = std::thread([this, chunk = std::move(chunk)] {
        try {
            append(chunk);
        } catch (...) {
            failure_ = std::current_exception();
        }
    });
}

void TokenCacheWriter::append(const ByteChunk& chunk) {
    const int64_t closed = chunk.documents() - (chunk.last_open ? 1 : 0);
    std::vector<int64_t> ends;
    if (!tokenizer_) {
        // The ids are the bytes: width 1, written as they are.
        ids_.write(chunk.bytes.data(), static_cast<std::streamsize>(chunk.bytes.size()));
        if (chunk.counted.empty()) writeMarks(nullptr, chunk.bytes.size());
        else writeMarks(chunk.counted.data(), chunk.counted.size());
        for (int64_t d = 0; d < closed; ++d) ends.push_back(written_ids_ + chunk.starts[d + 1]);
        written_ids_ += static_cast<int64_t>(chunk.bytes.size());
    } else {
        const TokenizedChunk tokens = tokenizeChunk(chunk, *tokenizer_, end_token_);
        writeIds(tokens.ids.data(), tokens.ids.size());
        writeMarks(tokens.counted.data(), tokens.counted.size());
        for (int64_t end : tokens.ends) ends.push_back(written_ids_ + end);
        written_ids_ += static_cast<int64_t>(tokens.ids.size());
    }
    starts_.write(reinterpret_cast<const char*>(ends.data()), static_cast<std::streamsize>(ends.size() * 8));
    documents_ += closed;
    if (!ids_ || !starts_ || !marks_) throw std::runtime_error("cannot write " + partial_ + " (is the disk full?)");
}

void TokenCacheWriter::writeIds(const int32_t* ids, size_t count) {
    if (width_ == 4) {
        ids_.write(reinterpret_cast<const char*>(ids), static_cast<std::streamsize>(count * 4));
        return;
    }
    std::vector<char> narrow(count * width_);
    for (size_t i = 0; i < count; ++i) {
        if (width_ == 1) narrow[i] = static_cast<char>(static_cast<uint8_t>(ids[i]));
        else reinterpret_cast<uint16_t*>(narrow.data())[i] = static_cast<uint16_t>(ids[i]);
    }
    ids_.write(narrow.data(), static_cast<std::streamsize>(narrow.size()));
}

void TokenCacheWriter::writeMarks(const uint8_t* counted, size_t count) {
    std::vector<char> packed;
    packed.reserve(count / 8 + 1);
    for (size_t i = 0; i < count; ++i) {
        const int64_t at = written_ids_ + static_cast<int64_t>(i);
        const bool counts = !counted || counted[i];  // null: every id counts
        if (!counts) any_uncounted_ = true;
        mark_byte_ |= static_cast<uint8_t>((counts ? 1 : 0) << (at & 7));
        if ((at & 7) == 7) {
            packed.push_back(static_cast<char>(mark_byte_));
            mark_byte_ = 0;
        }
    }
    marks_.write(packed.data(), static_cast<std::streamsize>(packed.size()));
}

void TokenCacheWriter::commit(int64_t bytes_read) {
    wait();
    if ((written_ids_ & 7) != 0) marks_.put(static_cast<char>(mark_byte_));
    starts_.close();
    marks_.close();
    header_.documents = documents_;
    header_.ids = written_ids_;
    header_.bytes_read = bytes_read;
    header_.marked = any_uncounted_;
    const std::string header = encodeTokenCacheHeader(header_);
    const int64_t at = header_.header_bytes + written_ids_ * width_;
    ids_.write(std::string(static_cast<size_t>(header_.starts_offset - at), '\0').data(), header_.starts_offset - at);
    appendFile(ids_, partial_ + ".starts");
    if (header_.marked) appendFile(ids_, partial_ + ".marks");
    ids_.seekp(0);
    ids_.write(header.data(), static_cast<std::streamsize>(header.size()));
    ids_.close();
    std::error_code error;
    if (!ids_ || fs::file_size(partial_, error) != static_cast<uint64_t>(header_.file_size))
        throw std::runtime_error("cannot write " + partial_ + " (is the disk full?)");
    fs::rename(partial_, path_, error);
    if (error) throw std::runtime_error("cannot rename " + partial_ + " to " + path_ + ": " + error.message());
    committed_ = true;
    for (const char* suffix : {".starts", ".marks"}) fs::remove(partial_ + suffix, error);
}

}  // namespace trainbench
