#!/usr/bin/env python3
"""Writes the expected outputs of tests/template from Python's jinja2 (the reference
implementation), configured as Hugging Face transformers renders chat templates:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
loopcontrols extension, transformers' tojson, raise_exception and strftime_now.

  jinja_cases.json: {"jinja2": version, "cases": [{"name", "template", "context", "output"}]}
  chat_cases.json:  the Qwen3 and Llama 3 templates of ../shared/testdata/tokenizers
                    applied to conversations: {"cases": [{"name", "model", "messages",
                    "add_generation_prompt", "enable_thinking"?, "tools"?, "output"}]}

Run from this directory: python3 make_jinja_cases.py [path/to/shared/testdata]
"""
import json
import os
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


ENV = make_env()

# (name, template, context). Every case must render without error under jinja2.
CASES = [
    ("text", "Hello, world!\n", {}),
    ("output", "{{ a }} {{ b }} {{ c }} {{ d }} {{ e }}", {"a": 1, "b": "x", "c": None, "d": True, "e": 2.5}),
    ("undefined prints empty", "[{{ nope }}]", {}),
    ("floats", "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1.5e-7 }} {{ 10 / 4 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 3.0 * 2 }}", {}),
    ("string ops", "{{ 'a' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ 'x' + 'y' }} {{ 'b' in 'abc' }} {{ 'z' not in 'abc' }}", {}),
    ("list and dict literals", "{{ [1, 'a', none, true] }} {{ {'k': 'v', 'n': [1, 2]} }} {{ (1, 2) | list }} {{ [] }}", {}),
    ("comparisons", "{{ 1 < 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ [1, 2] < [1, 3] }} {{ none == none }} {{ 1 != 2 }} {{ 2 >= 2 }}", {}),
    ("logic", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not 0 }} {{ '' or [] }} {{ none and 1 }}", {}),
    ("conditional expr", "{{ 'yes' if a else 'no' }} {{ 'yes' if b else 'no' }} [{{ 'only' if b }}]", {"a": 1, "b": 0}),
    ("if elif else", "{% for x in [1, 2, 3, 4] %}{% if x == 1 %}one{% elif x == 2 %}two{% elif x == 3 %}three{% else %}many{% endif %},{% endfor %}", {}),
    ("for loop vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("for prev next cycle", "{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a', 'b') }};{% endfor %}", {}),
    ("for else", "{% for x in [] %}x{% else %}empty{% endfor %}", {}),
    ("for if filter", "{% for x in range(10) if x is odd %}{{ x }}{{ loop.length }} {% endfor %}", {}),
    ("for unpack items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for dict keys", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"z": 1, "y": 2}}),
    ("nested loops", "{% for i in [1, 2] %}{% for j in [1, 2] %}{{ loop.index }}{{ i }}{{ j }} {% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("break continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("set scoping", "{% set a = 1 %}{% for x in [1] %}{% set a = 2 %}{{ a }}{% endfor %}{{ a }}", {}),
    ("set persists across iterations", "{% for i in [1, 2, 3] %}{% if i > 1 %}{{ last }}{% endif %}{% set last = i %}{% endfor %}", {}),
    ("namespace", "{% set ns = namespace(n=0, s='') %}{% for x in [1, 2, 3] %}{% set ns.n = ns.n + x %}{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.n }} {{ ns.s }}", {}),
    ("set tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = [3, 4] %}{% set d, e = c %}{{ d }}{{ e }}", {}),
    ("set block", "{% set x %}inner {{ 1 + 1 }}{% endset %}[{{ x }}]{% set y | upper %}abc{% endset %}{{ y }}", {}),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', punct='?') }}", {}),
    ("macro sees top level", "{% set g = 'G' %}{% macro m() %}{{ g }}{% endmacro %}{{ m() }}", {}),
    ("call block", "{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}inside{% endcall %}", {}),
    ("filter block", "{% filter upper %}hello {{ 'x' }}{% endfilter %}", {}),
    ("raw", "{% raw %}{{ not rendered }}{% endraw %}", {}),
    ("comment", "a{# comment #}b{#- stripped -#}  c", {}),
    ("whitespace control", "a  {{- 'b' -}}  c\n  {%- if true %} d {% endif -%}\n e", {}),
    ("trim and lstrip blocks", "line1\n    {% if true %}\n    yes\n    {% endif %}\nline2\n", {}),
    ("lstrip plus", "x\n  {%+ if true %}y{% endif %}\n", {}),
    ("trim blocks comment", "a\n{# c #}\nb", {}),
    ("subscript", "{{ a[0] }} {{ a[-1] }} {{ d['k'] }} {{ d.k }} {{ s[1] }} [{{ a[10] }}] {{ a.0 }}", {"a": [1, 2, 3], "d": {"k": "v"}, "s": "h\u00e9llo"}),
    ("slices", "{{ a[1:] }} {{ a[:2] }} {{ a[::-1] }} {{ a[::2] }} {{ a[-2:] }} {{ s[1:3] }} {{ s[::-1] }} {{ a[5:] }}", {"a": [1, 2, 3, 4], "s": "h\u00e9llo"}),
    ("string methods", "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}", {"s": "  hi there \n"}),
    ("string methods 2", "{{ s.startswith('He') }} {{ s.endswith(('x', 'lo')) }} {{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 1) }} {{ s.upper() }} {{ s.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ s.find('l') }} {{ s.count('l') }} {{ '-'.join(['a', 'b']) }}", {"s": "Hello"}),
    ("string predicates", "{{ '123'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'a1'.isalnum() }} {{ ' '.isspace() }} {{ 'ab'.islower() }} {{ 'AB'.isupper() }} {{ ''.isdigit() }}", {}),
    ("dict methods", "{{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | map('list') | list }} {{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }}", {"d": {"a": 1, "b": 2}}),
    ("filters text", "{{ '  x  ' | trim }}|{{ 'xxyxx' | trim('x') }}|{{ 'abc' | upper }}|{{ 'ABC' | lower }}|{{ 'hello world' | title }}|{{ 'hello' | capitalize }}|{{ 'a-b-c' | replace('-', '+') }}|{{ 'abc' | reverse }}|{{ 'a b  c' | wordcount }}|{{ 'ab' | center(6) }}|", {}),
    ("filters lists", "{{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ ['b', 'A', 'c'] | sort }} {{ [1, 2, 2, 1] | unique | list }} {{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ [1, 2, 3] | length }} {{ [1, 2, 3] | sum }} {{ [1, 2, 3] | min }} {{ [1, 2, 3] | max }} {{ [1, 2] | reverse | list }} {{ 'abc' | list }}", {}),
    ("filters join map select", "{{ [1, 2, 3] | join(', ') }} {{ users | map(attribute='name') | join('/') }} {{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3, 4] | reject('odd') | list }} {{ users | selectattr('admin') | map(attribute='name') | list }} {{ users | rejectattr('admin') | map(attribute='name') | list }} {{ users | selectattr('name', 'equalto', 'b') | list | length }} {{ ['a', 'b'] | map('upper') | list }} {{ users | join(',', attribute='name') }}", {"users": [{"name": "a", "admin": True}, {"name": "b", "admin": False}]}),
    ("filters numbers", "{{ '42' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 3 | float }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 2.1 | round(method='ceil') }} {{ 42 | string }} {{ '3.7' | int }}", {}),
    ("filters default", "{{ nope | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | d('x') }} {{ 0 | default(5, boolean=true) }}", {}),
    ("filters dict", "{{ d | items | map('list') | list }} {% for k, v in d | dictsort %}{{ k }}{{ v }}{% endfor %} {{ d | length }} {{ d | tojson }}", {"d": {"b": 1, "a": [1, 2]}}),
    ("tojson", "{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ 'caf\u00e9 \"q\" \\n' | tojson }}|{{ none | tojson }}|{{ 1.0 | tojson }}", {"v": {"a": [1, 2.5, True, None, "x"], "b": {}}}),
    ("indent", "{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}|{{ 'a\n\nb' | indent(2, blank=true) }}|{{ 'a\nb' | indent('> ') }}", {}),
    ("format and escape", "{{ '%s-%d %%' | format('a', 3) }} {{ '<a href=\"x\">&</a>' | e }} {{ 'x' | safe }}", {}),
    ("tests", "{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ n is none }} {{ s is string }} {{ 1 is number }} {{ 1 is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ false is false }} {{ true is true }} {{ d is mapping }} {{ l is iterable }} {{ l is sequence }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 2 is eq 2 }} {{ 2 is ne 3 }} {{ 1 is lt 2 }} {{ 'a' is in 'abc' }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ x is not none }} {{ range is callable }}", {"x": 1, "n": None, "s": "s", "d": {}, "l": []}),
    ("range", "{{ range(3) | list }} {{ range(1, 4) | list }} {{ range(10, 0, -3) | list }} {{ range(0) | list }}", {}),
    ("string escapes", "{{ 'a\\tb\\\\c\\'d' }}|{{ \"e\\\"f\" }}|{{ '\\u00e9\\x41' }}|{{ 'adj' 'acent' }}", {}),
    ("multiline string literal", "{{ 'a\n\nb' }}", {}),
    ("filter precedence", "{{ 'x' + ' a ' | trim + 'y' }} {{ -3 | abs }} {{ [1, 2] | length - 1 }} {{ not 1 is none }}", {}),
    ("attribute of none", "[{{ n.x }}] {{ n.x is defined }}", {"n": None}),
    ("undefined tests and filters", "{{ u | length }} {{ u | default('d') }} {{ u is none }} {{ u | trim }}|{% for x in u %}x{% endfor %}|", {}),
    ("unicode", "{{ s | length }} {{ s[0] }} {{ s[1:] }} {{ s | reverse }} {{ s | tojson }}", {"s": "\u00e9t\u00e9 \U0001F999"}),
    ("truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, none, 0.0] %}{{ 'T' if v else 'F' }}{% endfor %}", {}),
    ("equality of containers", "{{ [1, [2]] == [1, [2]] }} {{ {'a': 1} == {'a': 1} }} {{ 'a' == 1 }} {{ true == 1 }}", {}),
    ("tojson of messages", "{% for m in messages %}{{ m | tojson }}\n{% endfor %}", {"messages": [{"role": "user", "content": "hi"}]}),
    ("trailing newline dropped", "x\n", {}),
    ("crlf newlines", "a\r\nb\rc\n{% if true %}\r\nd{% endif %}", {}),
    ("round half even", "{{ 0.5 | round }} {{ 1.5 | round }} {{ 2.5 | round }} {{ -0.5 | round }} {{ 2.675 | round(2) }}", {}),
    ("str of containers", "{{ ['a', \"b'c\", 1.5, none, true] }} {{ {'k': ['v']} }}", {}),
]


# Shapes of other families' chat templates (written here in their style, not copied).
MSGS = [{"role": "system", "content": "Sys"}, {"role": "user", "content": " Hi "},
        {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]
CASES += [
    ("gemma style", "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}",
     {"bos_token": "<bos>", "messages": MSGS[1:], "add_generation_prompt": True}),
    ("mistral style alternation", "{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}{%- set loop_messages = messages[1:] %}{%- else %}{%- set loop_messages = messages %}{%- endif %}{{- bos_token }}{%- for message in loop_messages %}{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{- raise_exception('roles must alternate') }}{%- endif %}{%- if message['role'] == 'user' %}{%- if loop.first and system_message is defined %}{{- ' [INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}{%- else %}{{- ' [INST] ' + message['content'] + ' [/INST]' }}{%- endif %}{%- elif message['role'] == 'assistant' %}{{- ' ' + message['content'] + eos_token}}{%- endif %}{%- endfor %}",
     {"bos_token": "<s>", "eos_token": "</s>", "messages": MSGS}),
    ("llama 3.1 style tools", "{%- if not date_string is defined %}{%- set date_string = '26 Jul 2024' %}{%- endif %}{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}{%- else %}{%- set system_message = '' %}{%- endif %}{{- bos_token }}{{- '<|start_header_id|>system<|end_header_id|>\n\n' }}{%- if tools is not none %}{{- 'Environment: ipython\n' }}{%- endif %}{{- 'Today Date: ' + date_string + '\n\n' }}{%- if tools is not none and not tools_in_user_message %}{%- for t in tools %}{{- t | tojson(indent=4) }}{{- '\n\n' }}{%- endfor %}{%- endif %}{{- system_message }}{{- '<|eot_id|>' }}{%- for message in messages %}{%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}{%- elif 'tool_calls' in message %}{%- if not message.tool_calls|length == 1 %}{{- raise_exception('one tool call') }}{%- endif %}{%- set tool_call = message.tool_calls[0].function %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}{{- '{\"name\": \"' + tool_call.name + '\", ' }}{{- '\"parameters\": ' }}{{- tool_call.arguments | tojson }}{{- '}' }}{{- '<|eot_id|>' }}{%- elif message.role == 'tool' or message.role == 'ipython' %}{{- '<|start_header_id|>ipython<|end_header_id|>\n\n' }}{%- if message.content is mapping or message.content is iterable %}{{- message.content | tojson }}{%- else %}{{- message.content }}{%- endif %}{{- '<|eot_id|>' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}",
     {"bos_token": "<|begin_of_text|>", "tools": [{"name": "f", "parameters": {"x": {"type": "int", "enum": [1, 2]}}}],
      "tools_in_user_message": False, "add_generation_prompt": True,
      "messages": MSGS + [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
                          {"role": "tool", "content": {"ok": True}}]}),
    ("phi3 style", "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}",
     {"eos_token": "<|endoftext|>", "messages": MSGS, "add_generation_prompt": False}),
    ("deepseek style namespace", "{% set ns = namespace(is_first=false, is_tool=false, system_prompt='') %}{%- for message in messages %}{%- if message['role'] == 'system' %}{% set ns.system_prompt = message['content'] %}{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<|User|>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is not none %}{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<|Assistant|>' + content + '<|end|>'}}{%- endif %}{%- endfor -%}{% if add_generation_prompt and not ns.is_tool %}{{'<|Assistant|><think>\n'}}{% endif %}",
     {"bos_token": "<B>", "add_generation_prompt": True,
      "messages": MSGS[:2] + [{"role": "assistant", "content": "<think>x</think>Answer"}, MSGS[3]]}),
]

# Not reproduced (so not listed): Python tuples print as lists here ("[1, 2]", not
# "(1, 2)"); str.upper/lower/title and the case-insensitive sorts change ASCII letters only.

# (name, template, context, expected substring of our message, status name): error cases
# are not jinja2-generated (messages differ); they are listed in the C++ test.


def render(template, context):
    return ENV.from_string(template).render(**context)


def main():
    cases = []
    for name, template, context in CASES:
        cases.append({"name": name, "template": template, "context": context, "output": render(template, context)})
    with open("jinja_cases.json", "w", encoding="utf-8") as f:
        json.dump({"jinja2": jinja2.__version__, "cases": cases}, f, ensure_ascii=False, indent=1)

    testdata = sys.argv[1] if len(sys.argv) > 1 else os.path.join("..", "..", "..", "..", "shared", "testdata")
    templates = {}
    specials = {}
    for model in ("qwen3", "llama3"):
        with open(os.path.join(testdata, "tokenizers", model, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        templates[model] = ENV.from_string(config["chat_template"])
        specials[model] = {"bos_token": config.get("bos_token") or "", "eos_token": config.get("eos_token") or ""}

    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    u1 = {"role": "user", "content": "Hello, how are you?"}
    a1 = {"role": "assistant", "content": "I'm doing great. How can I help you today?"}
    u2 = {"role": "user", "content": "  I'd like to show off how chat templating works!\n"}
    think = {"role": "assistant", "content": "<think>\nThe user greets me.\n</think>\n\nHello! Fine, thanks."}
    reasoning = {"role": "assistant", "content": "Sure.", "reasoning_content": "\nLet me think.\n"}
    tool_call = {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}}]}
    tool_call_str = {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"name": "get_time", "arguments": "{\"tz\": \"UTC\"}"}]}
    tool_resp = {"role": "tool", "content": "{\"temp\": 21}"}
    tool_resp2 = {"role": "tool", "content": "12:00"}
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                                "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                               "required": ["city"]}}}]
    unicode_user = {"role": "user", "content": "Caf\u00e9 \u4f60\u597d \U0001F999 \"quotes\" \\ backslash"}

    conversations = [
        ("user", [u1], {}),
        ("user no generation prompt", [u1], {"add_generation_prompt": False}),
        ("system user", [sys_msg, u1], {}),
        ("multi-turn", [sys_msg, u1, a1, u2], {}),
        ("multi-turn ends with assistant", [u1, a1], {"add_generation_prompt": False}),
        ("thinking off", [u1], {"enable_thinking": False}),
        ("thinking on", [u1], {"enable_thinking": True}),
        ("thinking off multi-turn", [sys_msg, u1, a1, u2], {"enable_thinking": False}),
        ("history with think block", [u1, think, u2], {}),
        ("last assistant with think block", [u1, think], {"add_generation_prompt": False}),
        ("reasoning_content field", [u1, reasoning], {"add_generation_prompt": False}),
        ("unicode and quotes", [unicode_user], {}),
        ("second system message", [sys_msg, u1, {"role": "system", "content": "Be brief."}, u2], {}),
        ("empty content", [{"role": "user", "content": ""}], {}),
    ]
    qwen_only = [
        ("tools", [sys_msg, u1], {"tools": tools}),
        ("tools without system", [u1], {"tools": tools}),
        ("tool call and responses", [u1, tool_call, tool_resp, tool_resp2, tool_call_str, tool_resp], {}),
    ]
    chat = []
    for model in ("qwen3", "llama3"):
        for name, messages, options in conversations + (qwen_only if model == "qwen3" else []):
            context = dict(specials[model])
            context["messages"] = messages
            context["add_generation_prompt"] = options.get("add_generation_prompt", True)
            case = {"name": name, "model": model, "messages": messages,
                    "add_generation_prompt": context["add_generation_prompt"]}
            for key in ("enable_thinking", "tools"):
                if key in options:
                    context[key] = options[key]
                    case[key] = options[key]
            case["output"] = templates[model].render(**context)
            chat.append(case)
    with open("chat_cases.json", "w", encoding="utf-8") as f:
        json.dump({"jinja2": jinja2.__version__, "cases": chat}, f, ensure_ascii=False, indent=1)
    print(len(cases), "engine cases,", len(chat), "chat cases")


if __name__ == "__main__":
    main()
