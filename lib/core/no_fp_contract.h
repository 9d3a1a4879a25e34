// Include first in a .cpp whose float expressions must round after every operation, as
// llama.cpp's reference quantizers do (ggml-base is built without FMA): GCC contracts
// a * b + c into a fused multiply-add by default in C++ when the target has FMA (even
// across statements), which changes the result where x / d lands on a rounding tie.
#pragma once

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
