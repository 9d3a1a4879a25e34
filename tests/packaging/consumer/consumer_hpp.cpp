// The installed inlay.hpp compiles on its own in a consumer (C++20).
#include <inlay/inlay.hpp>

int consumer_hpp_abi_version() { return inlay_abi_version(); }
