// Decoder<CpuBackend>: the one explicit instantiation for the CPU backend.
#include "backend/cpu/cpu_backend.h"
#include "model/decoder_impl.h"

namespace inlay {
template class Decoder<CpuBackend>;
}
