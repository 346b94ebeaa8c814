#ifndef ALBUMFS_CCRYPTO_SHIM_H
#define ALBUMFS_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#endif
