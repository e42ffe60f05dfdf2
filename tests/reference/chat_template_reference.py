"""The reference side of the chat-template tests: renders chat templates the
way transformers' tokenizer.apply_chat_template(..., tokenize=False) does, so
the C++ test can compare Tunebench's renderer with it.

    chat_template_reference.py CASES.json

CASES.json is a JSON list of cases, each an object
    {"template": "<path to a .jinja file>",   (relative paths: to the working folder)
     "messages": [{"role": ..., "content": ...}, ...],
     "add_generation_prompt": false,           (optional, false if absent)
     "bos_token": "...", "eos_token": "...",   (optional, left undefined if absent)
     "extra": {...}}                           (optional: more template variables)
Prints one JSON list to stdout with, for each case in order, {"text": the
rendered text} or {"error": the message of the exception the template
raised} (raise_exception(), an undefined value used, a type error, ...).

Rendering goes through transformers' own code path: the messages lose their
None-valued keys as apply_chat_template drops them, then
transformers.utils.chat_template_utils.render_jinja_template renders them in
transformers' sandboxed Jinja environment with the special tokens and extra
variables as keyword arguments (extra wins over bos_token/eos_token, as
apply_chat_template's **kwargs win over the tokenizer's special tokens).

Exit status 3: transformers or jinja2 cannot be imported; 2: the cases file
or a template file cannot be read.
"""

import json
import sys

try:
    import jinja2  # noqa: F401  (transformers compiles chat templates with it)
    from transformers.utils import chat_template_utils
except ImportError as missing:
    print(f"{sys.executable}: cannot import {missing.name}; install packaging/python-reference.txt "
          "into this environment (packaging/setup.sh test does)", file=sys.stderr)
    sys.exit(3)


def render(template, messages, add_generation_prompt, variables):
    """The text apply_chat_template(messages, tokenize=False, ...) returns for this template."""
    messages = [{k: v for k, v in message.items() if v is not None} for message in messages]
    if hasattr(chat_template_utils, "render_jinja_template"):
        rendered, _ = chat_template_utils.render_jinja_template(
            conversations=[messages], chat_template=template,
            add_generation_prompt=add_generation_prompt, **variables)
        return rendered[0]
    compiled = chat_template_utils._compile_jinja_template(template)
    return compiled.render(messages=messages, tools=None, documents=None,
                           add_generation_prompt=add_generation_prompt, **variables)


def run_case(case):
    try:
        with open(case["template"], encoding="utf-8", newline="") as f:
            template = f.read()
    except OSError as e:
        print(f"cannot read template {case['template']!r}: {e}", file=sys.stderr)
        sys.exit(2)
    variables = {k: case[k] for k in ("bos_token", "eos_token") if k in case}
    variables.update(case.get("extra") or {})
    try:
        return {"text": render(template, case["messages"], bool(case.get("add_generation_prompt", False)),
                               variables)}
    except Exception as e:  # whatever the template raised is the answer
        return {"error": str(e)}


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} CASES.json", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            cases = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read cases from {argv[1]!r}: {e}", file=sys.stderr)
        return 2
    json.dump([run_case(case) for case in cases], sys.stdout)  # ASCII: \u escapes, whatever the locale
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
