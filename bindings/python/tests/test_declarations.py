"""The ctypes declarations (inlay/_capi.py) against include/inlay/inlay.h: every function
the package calls with the header's return and parameter types, every struct with the
header's fields in order and their types, every callback type; and the library's
*_params_init_size filling our structs (defaults land in the fields that hold them)."""
import ctypes
import re
import unittest

from inlay import _capi

from . import support

SCALARS = {
    "int": ctypes.c_int, "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t, "bool": ctypes.c_bool, "float": ctypes.c_float,
    "double": ctypes.c_double,
}


def expected_types(c_type):
    """The ctypes types that pass `c_type` (a C declaration's type) correctly."""
    words = [w for w in re.findall(r"\w+|\*", c_type) if w not in ("const", "struct")]
    base, stars = words[0], words.count("*")
    if base == "void":
        return {None} if stars == 0 else {ctypes.c_void_p}
    if base == "char" and stars == 1:
        return {ctypes.c_char_p, ctypes.POINTER(ctypes.c_char)}
    if base == "char" and stars == 2:
        return {ctypes.POINTER(ctypes.c_char_p)}
    if base in _capi.HANDLE_TYPES:
        return {ctypes.c_void_p} if stars == 1 else {ctypes.POINTER(ctypes.c_void_p)}
    if base in _capi.STRUCTS and stars == 1:
        return {ctypes.POINTER(_capi.STRUCTS[base])}
    if base in _capi.CALLBACKS and stars == 0:
        return {_capi.CALLBACKS[base]}
    if base in _capi.ENUMS and stars == 0:
        return {ctypes.c_int}
    if base in SCALARS:
        t = SCALARS[base]
        return {t} if stars == 0 else {ctypes.POINTER(t)} if stars == 1 else set()
    raise AssertionError("no mapping for the C type %r" % c_type)


def split_declaration(decl):
    """'const char* path' -> 'const char*' (the name dropped)."""
    decl = decl.strip()
    m = re.match(r"^(.*?)(\w+)$", decl, re.S)
    return m.group(1).strip()


def parameters(text):
    text = text.strip()
    return [] if text in ("", "void") else [split_declaration(p) for p in text.split(",")]


class DeclarationsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.require(support.HEADER.is_file(), "inlay.h not found at %s (not a source checkout)" % support.HEADER)
        text = support.HEADER.read_text()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        cls.text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)
        cls.functions = {m.group(2): (m.group(1).strip(), parameters(m.group(3)))
                         for m in re.finditer(r"INLAY_API\s+([^;{}()]*?)\b(inlay_\w+)\s*\(([^)]*)\)\s*;", cls.text)}
        cls.structs = {m.group(1): m.group(2)
                       for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*\1\s*;", cls.text, re.S)}
        cls.callbacks = {m.group(2): (m.group(1).strip(), parameters(m.group(3)))
                         for m in re.finditer(r"typedef\s+([^;()]*?)\(\s*\*\s*(\w+)\s*\)\s*\(([^)]*)\)\s*;", cls.text)}

    def test_the_header_was_read(self):
        # Guards the parsing itself: these are in every version of inlay.h.
        self.assertIn("inlay_session_generate", self.functions)
        self.assertIn("inlay_generate_params", self.structs)
        self.assertIn("inlay_token_fn", self.callbacks)

    def test_functions(self):
        for name, (restype, argtypes) in _capi.FUNCTIONS.items():
            with self.subTest(function=name):
                self.assertIn(name, self.functions, "%s is not declared in inlay.h" % name)
                c_ret, c_params = self.functions[name]
                self.assertIn(restype, expected_types(c_ret), "return type %r" % c_ret)
                self.assertEqual(len(argtypes), len(c_params), "parameter count")
                for i, (ours, theirs) in enumerate(zip(argtypes, c_params)):
                    self.assertIn(ours, expected_types(theirs), "parameter %d: %r" % (i, theirs))

    def test_structs(self):
        for name, struct in _capi.STRUCTS.items():
            with self.subTest(struct=name):
                self.assertIn(name, self.structs)
                fields = [split_declaration(f) for f in self.structs[name].split(";") if f.strip()]
                c_names = [f.strip().split()[-1].lstrip("*") for f in self.structs[name].split(";") if f.strip()]
                self.assertEqual([n for n, _ in struct._fields_], c_names)
                for (field, ours), c_type in zip(struct._fields_, fields):
                    self.assertIn(ours, expected_types(c_type), "%s.%s: %r" % (name, field, c_type))

    def test_callbacks(self):
        for name, fn_type in _capi.CALLBACKS.items():
            with self.subTest(callback=name):
                c_ret, c_params = self.callbacks[name]
                self.assertIn(fn_type._restype_, expected_types(c_ret))
                self.assertEqual(len(fn_type._argtypes_), len(c_params))
                for ours, theirs in zip(fn_type._argtypes_, c_params):
                    self.assertIn(ours, expected_types(theirs), theirs)

    def test_abi_version(self):
        m = re.search(r"#define INLAY_ABI_VERSION (\d+)", support.HEADER.read_text())
        self.assertEqual(int(m.group(1)), _capi.ABI_VERSION)


class ParamsInitTest(unittest.TestCase):
    """The library fills our structs as inlay.h documents its defaults."""

    def setUp(self):
        self.lib = support.library()

    def init(self, struct, fn):
        p = struct()
        ctypes.memset(ctypes.byref(p), 0xAB, ctypes.sizeof(p))
        getattr(self.lib, fn)(ctypes.byref(p), ctypes.sizeof(p))
        self.assertEqual(p.struct_size, ctypes.sizeof(p))
        return p

    def test_generate_params(self):
        p = self.init(_capi.GenerateParams, "inlay_generate_params_init_size")
        self.assertEqual((p.max_tokens, p.top_k, p.penalty_last_n, p.seed, p.n_stop), (256, 40, 64, 2**64 - 1, 0))
        self.assertAlmostEqual(p.temperature, 0.8, places=6)
        self.assertAlmostEqual(p.top_p, 0.95, places=6)
        self.assertAlmostEqual(p.min_p, 0.05, places=6)
        self.assertEqual((p.repeat_penalty, p.frequency_penalty, p.presence_penalty), (1.0, 0.0, 0.0))
        self.assertEqual((p.ignore_eos, p.add_bos, p.parse_special), (False, True, True))
        self.assertFalse(p.stop)
        self.assertFalse(p.on_token)
        self.assertIsNone(p.user)

    def test_model_params(self):
        p = self.init(_capi.ModelParams, "inlay_model_params_init_size")
        self.assertEqual((p.n_threads, p.context_length, p.kv_budget_bytes, p.kv_block_size, p.batch_tokens,
                          p.device, p.device_index, p.kv_memory_fraction), (0, 0, 0, 0, 0, 0, 0, 0.0))
        self.assertFalse(p.progress)
        self.assertIsNone(p.kv_pool)

    def test_session_params(self):
        p = self.init(_capi.SessionParams, "inlay_session_params_init_size")
        self.assertEqual((p.context_length, p.speculation, p.n_draft, p.n_draft_min), (0, 0, 8, 0))
        self.assertAlmostEqual(p.p_min, 0.5, places=6)
        self.assertIsNone(p.draft_model)

    def test_chat_params(self):
        p = self.init(_capi.ChatParams, "inlay_chat_params_init_size")
        self.assertEqual((p.thinking, p.add_generation_prompt, p.chat_template), (0, True, None))


if __name__ == "__main__":
    unittest.main()
