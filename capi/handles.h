// The structs behind the C ABI's opaque handles.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "inlay/inlay.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/kv_pool_set.h"
#include "runtime/session.h"

struct inlay_model {
    std::shared_ptr<const inlay::Model> model;
    std::shared_ptr<inlay::Engine> engine;  // runs every session of the model (capi/runtime_api.cpp)
};

struct inlay_kv_pool {
    std::shared_ptr<inlay::KvPoolSet> pools;
};

namespace inlay::capi {
// The engine of a freshly loaded model, from the KV fields of its load params.
std::shared_ptr<Engine> make_engine(std::shared_ptr<const Model> model, const inlay_model_params& params);
}  // namespace inlay::capi

struct inlay_session {
    std::unique_ptr<inlay::Session> session;
};

struct inlay_result {
    inlay::GenerateResult result;
};
