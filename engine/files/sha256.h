// SHA-256 of a byte stream or a file (FIPS 180-4), for checkpoint checksums.
#pragma once

#include <cstdint>
#include <string>

namespace trainbench {

class Sha256 {
public:
    Sha256();
    void update(const void* data, size_t size);
    std::string hexDigest();  // finishes the hash; the object is spent afterwards

private:
    void block(const uint8_t* chunk);
    uint32_t state_[8];
    uint8_t buffer_[64];
    size_t buffered_ = 0;
    uint64_t total_bytes_ = 0;
};

// Hex digest of a whole file; throws std::runtime_error when it cannot be read.
std::string sha256OfFile(const std::string& path);

}  // namespace trainbench
