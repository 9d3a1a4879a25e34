// Include before <immintrin.h>'s AVX-512 intrinsics are used: GCC 12 reports its own
// intrinsics (their _mm512_undefined_* operands) as uninitialized when inlined (GCC bug
// 105593), which -Werror would turn into a failed build.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
