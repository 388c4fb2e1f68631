"""The `openai` Python package against fabtrain serve's HTTP side (run by client_tools_test.cc).

usage: openai_client_check.py BASE_URL API_KEY
Prints one JSON object with what the client got; exits 3 when `openai` cannot be imported (the
test then skips, saying so), 1 on any other failure.
"""
import json
import sys

try:
    import openai
except ImportError as e:  # the test skips with this message
    print(f"cannot import openai: {e}", file=sys.stderr)
    sys.exit(3)

base_url, api_key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=30.0, max_retries=0)
out = {}

out["models"] = [m.id for m in client.models.list().data]

chat = client.chat.completions.create(
    model="tiny", messages=[{"role": "user", "content": "hi"}], max_completion_tokens=12, seed=3)
out["chat"] = {"content": chat.choices[0].message.content,
               "role": chat.choices[0].message.role,
               "finish_reason": chat.choices[0].finish_reason,
               "usage": [chat.usage.prompt_tokens, chat.usage.completion_tokens,
                         chat.usage.total_tokens]}

pieces, finish, usage = [], None, None
for chunk in client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=12, stream=True,
        stream_options={"include_usage": True}):
    if chunk.usage is not None:
        usage = [chunk.usage.prompt_tokens, chunk.usage.completion_tokens]
    for choice in chunk.choices:
        if choice.delta.content:
            pieces.append(choice.delta.content)
        if choice.finish_reason:
            finish = choice.finish_reason
out["chat_stream"] = {"content": "".join(pieces), "chunks": len(pieces), "finish_reason": finish,
                      "usage": usage}

completion = client.completions.create(model="tiny", prompt="abc", max_tokens=5, stop=["ca"])
out["completion"] = {"text": completion.choices[0].text,
                     "finish_reason": completion.choices[0].finish_reason}

try:
    client.completions.create(model="tiny", prompt="abc", max_tokens=-5)
    out["bad_request"] = "no error"
except openai.BadRequestError as e:
    out["bad_request"] = {"status": e.status_code, "param": getattr(e, "param", None)}

try:
    client.chat.completions.create(model="not-served", messages=[{"role": "user", "content": "x"}])
    out["not_found"] = "no error"
except openai.NotFoundError as e:
    out["not_found"] = {"status": e.status_code}

try:
    openai.OpenAI(base_url=base_url, api_key="wrong", timeout=30.0, max_retries=0).models.list()
    out["wrong_key"] = "no error"
except openai.AuthenticationError as e:
    out["wrong_key"] = {"status": e.status_code}

print(json.dumps(out))
