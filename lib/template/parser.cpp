// Recursive descent with Jinja's operator precedence (jinja2/parser.py): conditional
// expression < or < and < not < comparisons/in < + - < ~ < * / // % < ** < unary
// minus/plus < primary with postfix (.attr, [index], (call)) and then filters/tests.
#include "template/parser.h"

#include <algorithm>
#include <initializer_list>

namespace inlay::tmpl {

namespace {

class Parser {
public:
    Parser(const std::vector<Token>& tokens, const std::string& name, int max_depth)
        : tokens_(tokens), name_(name), max_depth_(max_depth) {}

    Body parse_template() {
        std::string end;
        Body body = parse_body({}, end);
        return body;
    }

private:
    // Bounds the recursion of both expressions and blocks.
    class DepthGuard {
    public:
        explicit DepthGuard(Parser& p) : p_(p) {
            if (++p_.depth_ > p_.max_depth_)
                p_.error(p_.peek(), fmt::format("the template is nested more than {} levels deep", p_.max_depth_));
        }
        ~DepthGuard() { --p_.depth_; }
        DepthGuard(const DepthGuard&) = delete;
        DepthGuard& operator=(const DepthGuard&) = delete;

    private:
        Parser& p_;
    };

    const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
    const Token& next() {
        const Token& t = peek();
        if (pos_ < tokens_.size() - 1) ++pos_;
        return t;
    }

    [[noreturn]] void error(const Token& at, const std::string& message,
                            inlay_status status = INLAY_ERR_BAD_FORMAT) const {
        fail_at(status, name_, at.where, message);
    }

    static std::string describe(const Token& t) {
        switch (t.kind) {
            case TokenKind::text:
                return "template text";
            case TokenKind::expr_open:
                return "'{{'";
            case TokenKind::expr_close:
                return "'}}'";
            case TokenKind::stmt_open:
                return "'{%'";
            case TokenKind::stmt_close:
                return "'%}'";
            case TokenKind::name:
                return "'" + t.text + "'";
            case TokenKind::string:
                return "a string";
            case TokenKind::integer:
            case TokenKind::floating:
                return "number " + t.text;
            case TokenKind::op:
                return "'" + t.text + "'";
            case TokenKind::end:
                return "the end of the template";
        }
        return "?";
    }

    bool is_op(std::string_view op, size_t ahead = 0) const {
        return peek(ahead).kind == TokenKind::op && peek(ahead).text == op;
    }
    bool is_name(std::string_view name, size_t ahead = 0) const {
        return peek(ahead).kind == TokenKind::name && peek(ahead).text == name;
    }
    bool accept_op(std::string_view op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool accept_name(std::string_view name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    const Token& expect_op(std::string_view op) {
        if (!is_op(op)) error(peek(), fmt::format("expected '{}', found {}", op, describe(peek())));
        return next();
    }
    const Token& expect_kind(TokenKind kind, std::string_view what) {
        if (peek().kind != kind) error(peek(), fmt::format("expected {}, found {}", what, describe(peek())));
        return next();
    }
    std::string expect_identifier() {
        const Token& t = expect_kind(TokenKind::name, "a name");
        return t.text;
    }
    void expect_stmt_close(std::string_view statement) {
        if (peek().kind != TokenKind::stmt_close)
            error(peek(), fmt::format("expected '%}}' to end '{}', found {}", statement, describe(peek())));
        next();
    }

    // ---- statements ----

    // Parses nodes until `{% <one of ends>`; leaves the position after that keyword
    // and stores it in `end`. With no ends, parses to the end of the template.
    Body parse_body(std::initializer_list<std::string_view> ends, std::string& end) {
        DepthGuard guard(*this);
        Body body;
        while (true) {
            const Token& t = peek();
            switch (t.kind) {
                case TokenKind::end:
                    if (ends.size() != 0)
                        error(t, fmt::format("missing '{{% {} %}}' (the template ends first)", *(ends.end() - 1)));
                    return body;
                case TokenKind::text: {
                    auto n = node(Node::Kind::text, t.where);
                    n->text = t.text;
                    body.push_back(std::move(n));
                    next();
                    break;
                }
                case TokenKind::expr_open: {
                    next();
                    auto n = node(Node::Kind::output, t.where);
                    n->expr = parse_expression();
                    expect_kind(TokenKind::expr_close, "'}}'");
                    body.push_back(std::move(n));
                    break;
                }
                case TokenKind::stmt_open: {
                    const Token& keyword = peek(1);
                    if (keyword.kind == TokenKind::name &&
                        std::find(ends.begin(), ends.end(), keyword.text) != ends.end()) {
                        next();
                        end = next().text;
                        return body;
                    }
                    next();
                    parse_statement(body);
                    break;
                }
                default:
                    error(t, fmt::format("unexpected {}", describe(t)));
            }
        }
    }

    static std::unique_ptr<Node> node(Node::Kind kind, Location where) {
        auto n = std::make_unique<Node>();
        n->kind = kind;
        n->where = where;
        return n;
    }

    void parse_statement(Body& body) {
        const Token& keyword = peek();
        if (keyword.kind != TokenKind::name)
            error(keyword, fmt::format("expected a statement, found {}", describe(keyword)));
        const std::string word = keyword.text;
        const Location where = keyword.where;
        next();
        if (word == "if") {
            body.push_back(parse_if(where));
        } else if (word == "for") {
            body.push_back(parse_for(where));
        } else if (word == "set") {
            body.push_back(parse_set(where));
        } else if (word == "macro") {
            body.push_back(parse_macro(where));
        } else if (word == "call") {
            body.push_back(parse_call_block(where));
        } else if (word == "filter") {
            auto n = node(Node::Kind::filter_block, where);
            parse_filter_chain(n->filters, false);
            expect_stmt_close("filter");
            std::string end;
            n->body = parse_body({"endfilter"}, end);
            expect_stmt_close("endfilter");
            body.push_back(std::move(n));
        } else if (word == "break" || word == "continue") {
            if (loop_depth_ == 0) error(keyword, fmt::format("'{}' outside a for loop", word));
            expect_stmt_close(word);
            body.push_back(node(word == "break" ? Node::Kind::break_loop : Node::Kind::continue_loop, where));
        } else if (word == "generation") {
            // transformers' marker of assistant text: renders its body unchanged.
            expect_stmt_close(word);
            std::string end;
            Body inner = parse_body({"endgeneration"}, end);
            expect_stmt_close("endgeneration");
            for (auto& n : inner) body.push_back(std::move(n));
        } else if (word == "include" || word == "import" || word == "from" || word == "extends" || word == "block" ||
                   word == "with" || word == "do" || word == "autoescape" || word == "trans") {
            error(keyword, fmt::format("the '{}' statement is not supported", word), INLAY_ERR_UNSUPPORTED);
        } else if (word.starts_with("end") || word == "elif" || word == "else") {
            error(keyword, fmt::format("unexpected '{{% {} %}}' (no open block it could end)", word));
        } else {
            error(keyword, fmt::format("unknown statement '{}'", word));
        }
    }

    std::unique_ptr<Node> parse_if(Location where) {
        auto n = node(Node::Kind::if_chain, where);
        std::string end = "elif";
        while (end == "elif") {
            ExprPtr cond = parse_expression();
            expect_stmt_close("if");
            Body b = parse_body({"elif", "else", "endif"}, end);
            n->branches.emplace_back(std::move(cond), std::move(b));
        }
        if (end == "else") {
            expect_stmt_close("else");
            n->else_body = parse_body({"endif"}, end);
        }
        expect_stmt_close("endif");
        return n;
    }

    std::vector<std::string> parse_targets() {
        std::vector<std::string> targets;
        const bool paren = accept_op("(");
        do {
            targets.push_back(expect_identifier());
        } while (accept_op(","));
        if (paren) expect_op(")");
        return targets;
    }

    std::unique_ptr<Node> parse_for(Location where) {
        auto n = node(Node::Kind::for_loop, where);
        n->targets = parse_targets();
        if (!accept_name("in")) error(peek(), fmt::format("expected 'in' in a for loop, found {}", describe(peek())));
        n->expr = parse_tuple_expression(false);
        if (accept_name("if")) n->condition = parse_expression();
        if (is_name("recursive")) error(peek(), "recursive for loops are not supported", INLAY_ERR_UNSUPPORTED);
        expect_stmt_close("for");
        std::string end;
        ++loop_depth_;
        n->body = parse_body({"else", "endfor"}, end);
        --loop_depth_;
        if (end == "else") {
            expect_stmt_close("else");
            n->else_body = parse_body({"endfor"}, end);
        }
        expect_stmt_close("endfor");
        return n;
    }

    std::unique_ptr<Node> parse_set(Location where) {
        if (peek().kind != TokenKind::name) error(peek(), fmt::format("expected a name, found {}", describe(peek())));
        if (is_op(".", 1)) {
            auto n = node(Node::Kind::set, where);
            n->targets.push_back(next().text);
            next();
            n->attribute = expect_identifier();
            expect_op("=");
            n->expr = parse_tuple_expression(true);
            expect_stmt_close("set");
            return n;
        }
        std::vector<std::string> targets = parse_targets();
        if (accept_op("=")) {
            auto n = node(Node::Kind::set, where);
            n->targets = std::move(targets);
            n->expr = parse_tuple_expression(true);
            expect_stmt_close("set");
            return n;
        }
        auto n = node(Node::Kind::set_block, where);
        if (targets.size() != 1) error(peek(), "a {% set %} block assigns one name");
        n->targets = std::move(targets);
        if (is_op("|")) parse_filter_chain(n->filters, true);
        expect_stmt_close("set");
        std::string end;
        n->body = parse_body({"endset"}, end);
        expect_stmt_close("endset");
        return n;
    }

    std::unique_ptr<Node> parse_macro(Location where) {
        auto n = node(Node::Kind::macro, where);
        n->text = expect_identifier();
        parse_params(n->params);
        expect_stmt_close("macro");
        std::string end;
        const int saved = loop_depth_;
        loop_depth_ = 0;
        n->body = parse_body({"endmacro"}, end);
        loop_depth_ = saved;
        expect_stmt_close("endmacro");
        return n;
    }

    void parse_params(std::vector<std::pair<std::string, ExprPtr>>& params) {
        expect_op("(");
        while (!is_op(")")) {
            std::string param = expect_identifier();
            ExprPtr def;
            if (accept_op("=")) def = parse_expression();
            params.emplace_back(std::move(param), std::move(def));
            if (!accept_op(",")) break;
        }
        expect_op(")");
    }

    std::unique_ptr<Node> parse_call_block(Location where) {
        auto n = node(Node::Kind::call_block, where);
        if (is_op("(")) parse_params(n->params);
        n->expr = parse_expression();
        if (n->expr->kind != Expr::Kind::call) error(peek(), "{% call %} needs a macro call");
        expect_stmt_close("call");
        std::string end;
        n->body = parse_body({"endcall"}, end);
        expect_stmt_close("endcall");
        return n;
    }

    // "| f(args) | g" (with_bar: the first '|' is present, as in {% set x | f %}).
    void parse_filter_chain(std::vector<FilterCall>& filters, bool with_bar) {
        bool first = true;
        while (true) {
            if (!first || with_bar) {
                if (!accept_op("|")) break;
            }
            first = false;
            FilterCall f;
            f.where = peek().where;
            f.name = expect_identifier();
            if (is_op("(")) parse_call_args(f.args, f.keywords);
            filters.push_back(std::move(f));
        }
    }

    // ---- expressions ----

    static ExprPtr expr(Expr::Kind kind, Location where) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->where = where;
        return e;
    }

    ExprPtr parse_expression(bool with_condition = true) {
        DepthGuard guard(*this);
        ExprPtr e = parse_or();
        if (!with_condition) return e;
        while (is_name("if")) {
            const Location where = next().where;
            auto c = expr(Expr::Kind::condition, where);
            c->items.push_back(std::move(e));
            c->items.push_back(parse_or());
            c->items.push_back(accept_name("else") ? parse_expression() : nullptr);
            e = std::move(c);
        }
        return e;
    }

    // An expression, or a bare tuple "a, b" (for loops and set).
    ExprPtr parse_tuple_expression(bool with_condition) {
        const Location where = peek().where;
        ExprPtr first = parse_expression(with_condition);
        if (!is_op(",")) return first;
        auto t = expr(Expr::Kind::tuple, where);
        t->items.push_back(std::move(first));
        while (accept_op(",")) {
            if (peek().kind == TokenKind::stmt_close) break;
            t->items.push_back(parse_expression(with_condition));
        }
        return t;
    }

    ExprPtr binary(Expr::Kind kind, std::string op, ExprPtr l, ExprPtr r, Location where) {
        auto e = expr(kind, where);
        e->name = std::move(op);
        e->items.push_back(std::move(l));
        e->items.push_back(std::move(r));
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr l = parse_and();
        while (is_name("or")) {
            const Location where = next().where;
            l = binary(Expr::Kind::logical, "or", std::move(l), parse_and(), where);
        }
        return l;
    }

    ExprPtr parse_and() {
        ExprPtr l = parse_not();
        while (is_name("and")) {
            const Location where = next().where;
            l = binary(Expr::Kind::logical, "and", std::move(l), parse_not(), where);
        }
        return l;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            const Location where = next().where;
            auto e = expr(Expr::Kind::unary, where);
            e->name = "not";
            e->items.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        ExprPtr l = parse_math1();
        while (true) {
            const Token& t = peek();
            if (t.kind == TokenKind::op && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" ||
                                            t.text == ">" || t.text == ">=")) {
                const Location where = t.where;
                std::string op = next().text;
                l = binary(Expr::Kind::binary, std::move(op), std::move(l), parse_math1(), where);
            } else if (is_name("in")) {
                const Location where = next().where;
                l = binary(Expr::Kind::binary, "in", std::move(l), parse_math1(), where);
            } else if (is_name("not") && is_name("in", 1)) {
                const Location where = next().where;
                next();
                l = binary(Expr::Kind::binary, "not in", std::move(l), parse_math1(), where);
            } else {
                return l;
            }
        }
    }

    ExprPtr parse_math1() {
        ExprPtr l = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Location where = peek().where;
            std::string op = next().text;
            l = binary(Expr::Kind::binary, std::move(op), std::move(l), parse_concat(), where);
        }
        return l;
    }

    ExprPtr parse_concat() {
        ExprPtr l = parse_math2();
        while (is_op("~")) {
            const Location where = next().where;
            l = binary(Expr::Kind::binary, "~", std::move(l), parse_math2(), where);
        }
        return l;
    }

    ExprPtr parse_math2() {
        ExprPtr l = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Location where = peek().where;
            std::string op = next().text;
            l = binary(Expr::Kind::binary, std::move(op), std::move(l), parse_pow(), where);
        }
        return l;
    }

    ExprPtr parse_pow() {
        ExprPtr l = parse_unary(true);
        while (is_op("**")) {
            const Location where = next().where;
            l = binary(Expr::Kind::binary, "**", std::move(l), parse_unary(true), where);
        }
        return l;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            const Location where = peek().where;
            e = expr(Expr::Kind::unary, where);
            e->name = next().text;
            e->items.push_back(parse_unary(false));
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        if (with_filter) e = parse_filters_and_tests(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = peek();
        switch (t.kind) {
            case TokenKind::name: {
                next();
                auto e = expr(Expr::Kind::literal, t.where);
                if (t.text == "true" || t.text == "True") {
                    e->value = Value(true);
                } else if (t.text == "false" || t.text == "False") {
                    e->value = Value(false);
                } else if (t.text == "none" || t.text == "None") {
                    e->value = Value::none();
                } else {
                    e->kind = Expr::Kind::name;
                    e->name = t.text;
                }
                return e;
            }
            case TokenKind::string: {
                auto e = expr(Expr::Kind::literal, t.where);
                std::string s = next().text;
                while (peek().kind == TokenKind::string) s += next().text;  // "a" "b" == "ab"
                e->value = Value(std::move(s));
                return e;
            }
            case TokenKind::integer: {
                auto e = expr(Expr::Kind::literal, t.where);
                e->value = Value(next().int_value);
                return e;
            }
            case TokenKind::floating: {
                auto e = expr(Expr::Kind::literal, t.where);
                e->value = Value(next().float_value);
                return e;
            }
            case TokenKind::op:
                if (t.text == "(") {
                    next();
                    if (accept_op(")")) return expr(Expr::Kind::tuple, t.where);
                    ExprPtr first = parse_expression();
                    if (accept_op(")")) return first;
                    auto tuple = expr(Expr::Kind::tuple, t.where);
                    tuple->items.push_back(std::move(first));
                    while (accept_op(",")) {
                        if (is_op(")")) break;
                        tuple->items.push_back(parse_expression());
                    }
                    expect_op(")");
                    return tuple;
                }
                if (t.text == "[") {
                    next();
                    auto list = expr(Expr::Kind::list, t.where);
                    while (!is_op("]")) {
                        list->items.push_back(parse_expression());
                        if (!accept_op(",")) break;
                    }
                    expect_op("]");
                    return list;
                }
                if (t.text == "{") {
                    next();
                    auto dict = expr(Expr::Kind::dict, t.where);
                    while (!is_op("}")) {
                        dict->items.push_back(parse_expression());
                        expect_op(":");
                        dict->items.push_back(parse_expression());
                        if (!accept_op(",")) break;
                    }
                    expect_op("}");
                    return dict;
                }
                break;
            default:
                break;
        }
        error(t, fmt::format("expected an expression, found {}", describe(t)));
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            if (is_op(".")) {
                const Location where = next().where;
                if (peek().kind == TokenKind::integer) {  // foo.0 is foo[0]
                    auto s = expr(Expr::Kind::subscript, where);
                    auto index = expr(Expr::Kind::literal, peek().where);
                    index->value = Value(next().int_value);
                    s->items.push_back(std::move(e));
                    s->items.push_back(std::move(index));
                    e = std::move(s);
                    continue;
                }
                auto a = expr(Expr::Kind::attribute, where);
                a->name = expect_identifier();
                a->items.push_back(std::move(e));
                e = std::move(a);
            } else if (is_op("[")) {
                const Location where = next().where;
                e = parse_subscript(std::move(e), where);
            } else if (is_op("(")) {
                auto c = expr(Expr::Kind::call, e->where);  // errors point at the callee
                c->items.push_back(std::move(e));
                std::vector<ExprPtr> args;
                parse_call_args(args, c->keywords);
                for (auto& a : args) c->items.push_back(std::move(a));
                e = std::move(c);
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr target, Location where) {
        ExprPtr parts[3];
        bool is_slice = false;
        for (int i = 0; i < 3; ++i) {
            if (!is_op(":") && !is_op("]")) parts[i] = parse_expression();
            if (i < 2 && accept_op(":")) {
                is_slice = true;
                continue;
            }
            break;
        }
        expect_op("]");
        if (!is_slice) {
            if (!parts[0]) error(peek(), "expected an index inside '[]'");
            auto s = expr(Expr::Kind::subscript, where);
            s->items.push_back(std::move(target));
            s->items.push_back(std::move(parts[0]));
            return s;
        }
        auto s = expr(Expr::Kind::slice, where);
        s->items.push_back(std::move(target));
        for (auto& p : parts) s->items.push_back(std::move(p));
        return s;
    }

    void parse_call_args(std::vector<ExprPtr>& args, std::vector<std::pair<std::string, ExprPtr>>& keywords) {
        expect_op("(");
        while (!is_op(")")) {
            if (peek().kind == TokenKind::name && is_op("=", 1)) {
                std::string key = next().text;
                next();
                keywords.emplace_back(std::move(key), parse_expression());
            } else {
                if (!keywords.empty()) error(peek(), "a positional argument follows keyword arguments");
                args.push_back(parse_expression());
            }
            if (!accept_op(",")) break;
        }
        expect_op(")");
    }

    ExprPtr parse_filters_and_tests(ExprPtr e) {
        while (true) {
            if (is_op("|")) {
                const Location where = next().where;
                auto f = expr(Expr::Kind::filter, where);
                f->name = expect_identifier();
                f->items.push_back(std::move(e));
                if (is_op("(")) {
                    std::vector<ExprPtr> args;
                    parse_call_args(args, f->keywords);
                    for (auto& a : args) f->items.push_back(std::move(a));
                }
                e = std::move(f);
            } else if (is_name("is")) {
                const Location where = next().where;
                auto t = expr(Expr::Kind::test, where);
                t->negated = accept_name("not");
                t->name = expect_identifier();
                t->items.push_back(std::move(e));
                if (is_op("(")) {
                    std::vector<ExprPtr> args;
                    parse_call_args(args, t->keywords);
                    for (auto& a : args) t->items.push_back(std::move(a));
                } else if (starts_test_argument()) {
                    t->items.push_back(parse_postfix(parse_primary()));
                }
                e = std::move(t);
            } else {
                return e;
            }
        }
    }

    // Jinja lets a test take one argument without parentheses ("is divisibleby 3").
    bool starts_test_argument() const {
        const Token& t = peek();
        if (t.kind == TokenKind::string || t.kind == TokenKind::integer || t.kind == TokenKind::floating) return true;
        if (t.kind == TokenKind::op) return t.text == "[" || t.text == "{";
        if (t.kind != TokenKind::name) return false;
        static constexpr std::string_view keywords[] = {"else", "or", "and", "if", "in", "not", "is"};
        return std::find(std::begin(keywords), std::end(keywords), t.text) == std::end(keywords);
    }

    const std::vector<Token>& tokens_;
    const std::string& name_;
    int max_depth_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const std::string& name, int max_depth) {
    if (tokens.empty() || tokens.back().kind != TokenKind::end)
        fail(INLAY_ERR_INTERNAL, "{}: token list has no end", name);
    return Parser(tokens, name, max_depth).parse_template();
}

}  // namespace inlay::tmpl
