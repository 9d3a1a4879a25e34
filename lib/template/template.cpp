// Template: parsing, and the tree-walking renderer. Scoping follows Jinja: a for loop
// has its own scope (assignments inside it do not leak out, hence namespace()), if
// blocks do not, and a macro sees its own scope plus the template's top level.
#include "template/template.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/utf8.h"
#include "template/builtins.h"
#include "template/lexer.h"
#include "template/parser.h"

namespace inlay::tmpl {

Template::Template(std::string_view source, TemplateOptions options) : options_(std::move(options)) {
    if (const size_t bad = utf8::find_invalid(source); bad != std::string_view::npos)
        fail(INLAY_ERR_BAD_FORMAT, "{}: the template is not valid UTF-8 (byte offset {})", options_.name, bad);
    const LexOptions lex_options{options_.trim_blocks, options_.lstrip_blocks, false};
    body_ = std::make_shared<const Body>(
        parse(lex(source, lex_options, options_.name), options_.name, options_.max_nesting));
}

namespace {

class Renderer {
public:
    Renderer(const TemplateOptions& options, const Object& context) : options_(options) {
        scopes_.emplace_back();
        for (auto& [k, v] : builtin_globals(options.limits).items) scopes_[0][k] = v;
        const Value make_namespace = scopes_[0]["namespace"];
        scopes_[0]["namespace"] = Value::function(
            [this, make_namespace](CallArgs& args) {
                Value ns = make_namespace.as_function()(args);
                own_mutable(ns.as_object());
                return ns;
            },
            "namespace");
        for (const auto& [k, v] : context.items) scopes_[0][k] = v;
    }

    // Namespaces and loop objects are the only values a template can change after making
    // them, so every reference cycle (`{% set ns.me = ns %}`, a namespace holding the
    // bound method of a dict that holds it, or a loop over itself) runs through one of
    // them. None of them outlives the render, so emptying them here frees every cycle,
    // on errors too.
    ~Renderer() {
        for (const auto& weak : mutables_)
            if (const auto o = weak.lock()) {
                const auto items = std::move(o->items);
                o->items.clear();
            }
    }
    Renderer(const Renderer&) = delete;
    Renderer& operator=(const Renderer&) = delete;

    std::string run(const Body& body) {
        exec_body(body);
        return std::move(out_);
    }

private:
    using Scope = std::unordered_map<std::string, Value>;
    enum class Flow { normal, break_loop, continue_loop };

    class DepthGuard {
    public:
        explicit DepthGuard(Renderer& r) : r_(r) {
            if (++r_.depth_ > r_.options_.max_render_depth)
                fail(INLAY_ERR_BAD_FORMAT, "rendering recursed more than {} levels deep (runaway macro recursion?)",
                     r_.options_.max_render_depth);
        }
        ~DepthGuard() { --r_.depth_; }
        DepthGuard(const DepthGuard&) = delete;
        DepthGuard& operator=(const DepthGuard&) = delete;

    private:
        Renderer& r_;
    };

    // A scope pushed for the lifetime of the object; `barrier` hides the scopes below
    // it (except the top level) from lookups, for macro bodies.
    class ScopeGuard {
    public:
        ScopeGuard(Renderer& r, bool barrier) : r_(r), saved_barrier_(r.barrier_) {
            r_.scopes_.emplace_back();
            if (barrier) r_.barrier_ = r_.scopes_.size() - 1;
        }
        ~ScopeGuard() {
            r_.scopes_.pop_back();
            r_.barrier_ = saved_barrier_;
        }
        ScopeGuard(const ScopeGuard&) = delete;
        ScopeGuard& operator=(const ScopeGuard&) = delete;

    private:
        Renderer& r_;
        size_t saved_barrier_;
    };

    void step() {
        if (++steps_ > options_.max_steps)
            fail(INLAY_ERR_BAD_FORMAT, "rendering took more than {} steps (a runaway loop?)", options_.max_steps);
    }

    void own_mutable(const std::shared_ptr<Object>& o) {
        // Forget the ones already freed whenever the list doubles: a loop making a
        // namespace per iteration keeps it short.
        if (mutables_.size() == mutables_capacity_) {
            std::erase_if(mutables_, [](const std::weak_ptr<Object>& w) { return w.expired(); });
            mutables_capacity_ = std::max<size_t>(16, 2 * mutables_.size());
        }
        mutables_.push_back(o);
    }

    void emit(std::string_view text) {
        if (out_.size() + text.size() > options_.max_output_bytes)
            fail(INLAY_ERR_BAD_FORMAT, "the rendered text exceeds {} bytes", options_.max_output_bytes);
        out_ += text;
    }

    Value lookup(const std::string& name) const {
        for (size_t i = scopes_.size() - 1; i >= barrier_ && i > 0; --i) {
            const auto it = scopes_[i].find(name);
            if (it != scopes_[i].end()) return it->second;
        }
        const auto it = scopes_[0].find(name);
        if (it != scopes_[0].end()) return it->second;
        return Value::undefined(fmt::format("'{}' is undefined", name));
    }

    void assign(const std::string& name, Value v) { scopes_.back()[name] = std::move(v); }

    void assign_targets(const std::vector<std::string>& targets, const Value& v) {
        if (targets.size() == 1) {
            assign(targets[0], v);
            return;
        }
        if (!v.is_array())
            fail(INLAY_ERR_BAD_FORMAT, "cannot unpack a '{}' into {} names", v.type_name(), targets.size());
        const Array& a = *v.as_array();
        if (a.size() != targets.size())
            fail(INLAY_ERR_BAD_FORMAT, "cannot unpack {} values into {} names", a.size(), targets.size());
        for (size_t i = 0; i < a.size(); ++i) assign(targets[i], a[i]);
    }

    std::string capture(const Body& body) {
        std::string saved;
        std::swap(out_, saved);
        try {
            exec_body(body);
        } catch (...) {
            std::swap(out_, saved);
            throw;
        }
        std::string result = std::move(out_);
        out_ = std::move(saved);
        return result;
    }

    // ---- statements ----

    Flow exec_body(const Body& body) {
        for (const auto& n : body) {
            const Flow f = exec(*n);
            if (f != Flow::normal) return f;
        }
        return Flow::normal;
    }

    Flow exec(const Node& n) {
        DepthGuard guard(*this);
        try {
            step();
            return exec_node(n);
        } catch (const TemplateError&) {
            throw;
        } catch (const Error& e) {
            fail_at(e.status(), options_.name, n.where, e.what());
        }
    }

    Flow exec_node(const Node& n) {
        switch (n.kind) {
            case Node::Kind::text:
                emit(n.text);
                return Flow::normal;
            case Node::Kind::output:
                emit(eval(*n.expr).str());
                return Flow::normal;
            case Node::Kind::if_chain:
                for (const auto& [cond, body] : n.branches)
                    if (eval(*cond).truthy()) return exec_body(body);
                return exec_body(n.else_body);
            case Node::Kind::for_loop:
                return exec_for(n);
            case Node::Kind::set: {
                Value v = eval(*n.expr);
                if (n.attribute.empty()) {
                    assign_targets(n.targets, v);
                    return Flow::normal;
                }
                const Value target = lookup(n.targets[0]);
                if (!target.is_object() || !target.as_object()->is_namespace)
                    fail(INLAY_ERR_BAD_FORMAT,
                         "cannot assign the attribute '{}' of '{}': only namespace() objects allow it", n.attribute,
                         n.targets[0]);
                target.as_object()->set(n.attribute, std::move(v));
                return Flow::normal;
            }
            case Node::Kind::set_block: {
                Value v(capture(n.body));
                assign(n.targets[0], apply_filters(n.filters, std::move(v)));
                return Flow::normal;
            }
            case Node::Kind::macro:
                assign(n.text, make_macro(n));
                return Flow::normal;
            case Node::Kind::call_block: {
                const Expr& call = *n.expr;
                const Value callee = eval(*call.items[0]);
                CallArgs args = eval_args(call);
                args.keyword.emplace_back("caller", Value::function(
                                                        [this, &n](CallArgs& a) {
                                                            DepthGuard depth(*this);
                                                            ScopeGuard scope(*this, false);
                                                            bind_params(n.params, a, "caller");
                                                            return Value(capture(n.body));
                                                        },
                                                        "caller"));
                emit(call_value(callee, args).str());
                return Flow::normal;
            }
            case Node::Kind::filter_block:
                emit(apply_filters(n.filters, Value(capture(n.body))).str());
                return Flow::normal;
            case Node::Kind::break_loop:
                return Flow::break_loop;
            case Node::Kind::continue_loop:
                return Flow::continue_loop;
        }
        return Flow::normal;
    }

    Value apply_filters(const std::vector<FilterCall>& filters, Value v) {
        for (const FilterCall& f : filters) {
            CallArgs args;
            for (const auto& a : f.args) args.positional.push_back(eval(*a));
            for (const auto& [k, a] : f.keywords) args.keyword.emplace_back(k, eval(*a));
            try {
                v = apply_filter(f.name, v, args, options_.limits);
            } catch (const TemplateError&) {
                throw;
            } catch (const Error& e) {
                fail_at(e.status(), options_.name, f.where, e.what());
            }
        }
        return v;
    }

    Flow exec_for(const Node& n) {
        const Value iterable = eval(*n.expr);
        if (iterable.is_none()) fail(INLAY_ERR_BAD_FORMAT, "'none' object is not iterable");
        std::vector<Value> items = iterate(iterable);
        check_list_size(items.size(), options_.limits);
        ScopeGuard scope(*this, false);
        if (n.condition) {
            std::vector<Value> kept;
            for (Value& item : items) {
                step();
                assign_targets(n.targets, item);
                if (eval(*n.condition).truthy()) kept.push_back(std::move(item));
            }
            items = std::move(kept);
        }
        if (items.empty()) return exec_body(n.else_body);
        const auto length = static_cast<int64_t>(items.size());
        // One loop object per loop, updated in place: an iteration costs no allocations.
        auto loop = std::make_shared<Object>();
        own_mutable(loop);
        auto index = std::make_shared<int64_t>(0);
        for (const char* key : {"index0", "index", "revindex0", "revindex", "first", "last", "length", "depth",
                                "depth0", "previtem", "nextitem"})
            loop->set(key, Value());
        loop->set("cycle", Value::function(
                               [index](CallArgs& a) {
                                   if (a.positional.empty()) fail(INLAY_ERR_BAD_FORMAT, "loop.cycle() needs arguments");
                                   return a.positional[static_cast<size_t>(*index) % a.positional.size()];
                               },
                               "loop.cycle"));
        const Value loop_value(loop);
        for (int64_t i = 0; i < length; ++i) {
            step();
            // Each iteration has its own scope: a set in the body does not reach the
            // next iteration (Jinja).
            ScopeGuard iteration(*this, false);
            const auto u = static_cast<size_t>(i);
            *index = i;
            auto& v = loop->items;  // in the order set above
            v[0].second = Value(i);
            v[1].second = Value(i + 1);
            v[2].second = Value(length - i - 1);
            v[3].second = Value(length - i);
            v[4].second = Value(i == 0);
            v[5].second = Value(i == length - 1);
            v[6].second = Value(length);
            v[7].second = Value(1);
            v[8].second = Value(0);
            v[9].second = i > 0 ? items[u - 1] : Value::undefined("loop.previtem is undefined on the first item");
            v[10].second =
                i + 1 < length ? items[u + 1] : Value::undefined("loop.nextitem is undefined on the last item");
            assign("loop", loop_value);
            assign_targets(n.targets, items[u]);
            if (exec_body(n.body) == Flow::break_loop) break;
        }
        return Flow::normal;
    }

    void bind_params(const std::vector<std::pair<std::string, ExprPtr>>& params, CallArgs& args,
                     const std::string& what) {
        if (args.positional.size() > params.size())
            fail(INLAY_ERR_BAD_FORMAT, "{}() takes {} arguments ({} given)", what, params.size(),
                 args.positional.size());
        std::vector<bool> used(args.keyword.size(), false);
        for (size_t i = 0; i < params.size(); ++i) {
            const auto& [name, def] = params[i];
            Value v;
            bool found = i < args.positional.size();
            if (found) v = args.positional[i];
            for (size_t k = 0; k < args.keyword.size(); ++k) {
                if (args.keyword[k].first != name) continue;
                if (found) fail(INLAY_ERR_BAD_FORMAT, "{}() got the argument '{}' twice", what, name);
                v = args.keyword[k].second;
                used[k] = found = true;
            }
            if (!found && def) v = eval(*def);
            assign(name, v);
        }
        for (size_t k = 0; k < args.keyword.size(); ++k) {
            if (used[k]) continue;
            if (args.keyword[k].first == "caller") {
                assign("caller", args.keyword[k].second);
                continue;
            }
            fail(INLAY_ERR_BAD_FORMAT, "{}() got an unexpected argument '{}'", what, args.keyword[k].first);
        }
    }

    Value make_macro(const Node& n) {
        return Value::function(
            [this, &n](CallArgs& args) {
                DepthGuard depth(*this);
                ScopeGuard scope(*this, true);
                bind_params(n.params, args, n.text);
                return Value(capture(n.body));
            },
            n.text);
    }

    // ---- expressions ----

    Value eval(const Expr& e) {
        DepthGuard guard(*this);
        try {
            step();
            return eval_expr(e);
        } catch (const TemplateError&) {
            throw;
        } catch (const Error& err) {
            fail_at(err.status(), options_.name, e.where, err.what());
        }
    }

    CallArgs eval_args(const Expr& e) {
        CallArgs args;
        for (size_t i = 1; i < e.items.size(); ++i) args.positional.push_back(eval(*e.items[i]));
        for (const auto& [k, a] : e.keywords) args.keyword.emplace_back(k, eval(*a));
        return args;
    }

    static Value call_value(const Value& callee, CallArgs& args) {
        if (!callee.is_function()) {
            require_defined(callee);
            fail(INLAY_ERR_BAD_FORMAT, "a '{}' object is not callable", callee.type_name());
        }
        return callee.as_function()(args);
    }

    Value eval_expr(const Expr& e) {
        switch (e.kind) {
            case Expr::Kind::literal:
                return e.value;
            case Expr::Kind::name:
                return lookup(e.name);
            case Expr::Kind::list:
            case Expr::Kind::tuple: {
                Array a;
                a.reserve(e.items.size());
                for (const auto& item : e.items) a.push_back(eval(*item));
                return Value(std::move(a));
            }
            case Expr::Kind::dict: {
                Object o;
                for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
                    const Value key = eval(*e.items[i]);
                    if (!key.is_string())
                        fail(INLAY_ERR_BAD_FORMAT, "dict keys must be strings, not '{}'", key.type_name());
                    o.set(key.as_string(), eval(*e.items[i + 1]));
                }
                return Value(std::move(o));
            }
            case Expr::Kind::attribute:
                return attribute(eval(*e.items[0]), e.name, options_.limits);
            case Expr::Kind::subscript: {
                const Value obj = eval(*e.items[0]);
                return subscript(obj, eval(*e.items[1]));
            }
            case Expr::Kind::slice: {
                const Value obj = eval(*e.items[0]);
                auto part = [&](size_t i) { return e.items[i] ? eval(*e.items[i]) : Value(); };
                const Value start = part(1), stop = part(2), step_v = part(3);
                return slice(obj, start, stop, step_v);
            }
            case Expr::Kind::call: {
                const Value callee = eval(*e.items[0]);
                CallArgs args = eval_args(e);
                return call_value(callee, args);
            }
            case Expr::Kind::filter: {
                const Value input = eval(*e.items[0]);
                CallArgs args = eval_args(e);
                return apply_filter(e.name, input, args, options_.limits);
            }
            case Expr::Kind::test: {
                const Value input = eval(*e.items[0]);
                CallArgs args = eval_args(e);
                return Value(apply_test(e.name, input, args) != e.negated);
            }
            case Expr::Kind::unary: {
                const Value v = eval(*e.items[0]);
                if (e.name == "not") return Value(!v.truthy());
                if (v.is_int() || v.is_bool()) {
                    const int64_t x = v.is_bool() ? v.as_bool() : v.as_int();
                    if (e.name == "+") return Value(x);
                    if (x == INT64_MIN) fail(INLAY_ERR_BAD_FORMAT, "integer overflow in unary '-'");
                    return Value(-x);
                }
                if (v.is_float()) return Value(e.name == "-" ? -v.as_double() : v.as_double());
                require_defined(v);
                fail(INLAY_ERR_BAD_FORMAT, "bad operand type for unary {}: '{}'", e.name, v.type_name());
            }
            case Expr::Kind::binary: {
                const Value l = eval(*e.items[0]);
                const Value r = eval(*e.items[1]);
                return binary_op(e.name, l, r, options_.limits);
            }
            case Expr::Kind::logical: {
                Value l = eval(*e.items[0]);
                if (e.name == "and") return l.truthy() ? eval(*e.items[1]) : l;
                return l.truthy() ? l : eval(*e.items[1]);
            }
            case Expr::Kind::condition:
                if (eval(*e.items[1]).truthy()) return eval(*e.items[0]);
                return e.items[2] ? eval(*e.items[2]) : Value::undefined("the condition is false and there is no else");
        }
        fail(INLAY_ERR_INTERNAL, "unknown expression kind");
    }

    const TemplateOptions& options_;
    std::vector<Scope> scopes_;
    std::vector<std::weak_ptr<Object>> mutables_;  // namespaces and loop objects made here
    size_t mutables_capacity_ = 0;
    size_t barrier_ = 0;
    std::string out_;
    uint64_t steps_ = 0;
    int depth_ = 0;
};

}  // namespace

std::string Template::render(const Object& context) const {
    return Renderer(options_, context).run(*body_);
}

}  // namespace inlay::tmpl
