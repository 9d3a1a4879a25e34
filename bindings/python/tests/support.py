"""Shared by the tests: where the repository's default model and header are, and the
skip rule every inlay test follows (INLAY_TEST_NO_SKIP=1 turns a skip into a failure)."""
import os
import pathlib
import shutil
import tempfile
import unittest

import inlay

HERE = pathlib.Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent                 # bindings/python
REPO = PACKAGE_ROOT.parent.parent          # the inlay checkout
MODELS = REPO / "models"
MODEL = MODELS / "default-q8_0.gguf"
FOLDER = MODELS / "default"
HEADER = REPO / "include" / "inlay" / "inlay.h"
EXAMPLE = PACKAGE_ROOT / "examples" / "chat.py"

# The default model's own chat template (models/default/tokenizer_config.json and the
# GGUFs made from it: a Q/A template, as the fortunes it was trained on hold Q:/A: jokes),
# here for tests that pass a template explicitly.
QA_TEMPLATE = ("{% for m in messages %}{% if m.role == 'system' %}{{ m.content }}\n"
               "{% elif m.role == 'user' %}Q: {{ m.content }}\n"
               "{% elif m.role == 'assistant' %}A:{{ m.content }}\n{% endif %}{% endfor %}"
               "{% if add_generation_prompt %}A:{% endif %}")


def require(condition, why):
    """Skips the test when `condition` is false, or fails it with INLAY_TEST_NO_SKIP=1."""
    if condition:
        return
    if os.environ.get("INLAY_TEST_NO_SKIP") == "1":
        raise AssertionError("%s (INLAY_TEST_NO_SKIP=1 turns this skip into a failure)" % why)
    raise unittest.SkipTest(why)


def library():
    """The libinlay under test (INLAY_LIBRARY, or the system's search)."""
    try:
        return inlay.default_library()
    except inlay.LibraryNotFoundError as e:
        require(False, "libinlay not found (set INLAY_LIBRARY to build/capi/libinlay.so): %s" % e)


def model(**options):
    library()
    require(MODEL.is_file(), "the default model %s is missing" % MODEL)
    options.setdefault("n_threads", 1)
    return inlay.Model(MODEL, **options)


def model_with_template():
    """The default model's Hugging Face folder plus a chat_template.jinja: a model whose
    own template is QA_TEMPLATE. Returns (Model, temporary folder to remove)."""
    library()
    require(FOLDER.is_dir(), "the default model folder %s is missing" % FOLDER)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="inlay-py-"))
    for f in FOLDER.iterdir():
        if f.name in ("config.json", "model.safetensors", "tokenizer.model", "tokenizer_config.json",
                      "special_tokens_map.json", "generation_config.json"):
            (folder / f.name).symlink_to(f)
    (folder / "chat_template.jinja").write_text(QA_TEMPLATE)
    try:
        return inlay.Model(folder, n_threads=1), folder
    except BaseException:
        shutil.rmtree(folder)
        raise


def model_without_template():
    """The default model's folder without a chat template (its tokenizer_config.json minus
    chat_template): a model that has none. Returns (Model, temporary folder to remove)."""
    import json
    library()
    require(FOLDER.is_dir(), "the default model folder %s is missing" % FOLDER)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="inlay-py-"))
    for f in FOLDER.iterdir():
        if f.name in ("config.json", "model.safetensors", "tokenizer.model", "special_tokens_map.json",
                      "generation_config.json"):
            (folder / f.name).symlink_to(f)
    config = json.loads((FOLDER / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    try:
        return inlay.Model(folder, n_threads=1), folder
    except BaseException:
        shutil.rmtree(folder)
        raise
