#ifndef FERRY_CCRYPTO_SHIM_H
#define FERRY_CCRYPTO_SHIM_H
#include <stddef.h>
#include <openssl/evp.h>

/// SHA-256 of `n` bytes into `out` (32 bytes), through OpenSSL's EVP interface (the one-shot SHA256() is deprecated
/// in OpenSSL 3): it uses the CPU's SHA instructions where there are some. Returns 1 on success.
static inline int ferry_sha256(const void *data, size_t n, unsigned char out[32]) {
    unsigned int size = 0;
    return EVP_Digest(data, n, out, &size, EVP_sha256(), NULL) == 1 && size == 32;
}
#endif
