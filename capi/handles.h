// The structs behind the C ABI's opaque handles.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "inlay/inlay.h"
#include "model/model.h"
#include "runtime/session.h"

struct inlay_model {
    std::shared_ptr<const inlay::Model> model;
};

struct inlay_session {
    std::unique_ptr<inlay::Session> session;
};

struct inlay_result {
    inlay::GenerateResult result;
};
