"""The relay with the clients students really use: the TypeScript SDK (npm), and a LiteLLM proxy as the upstream.

Both are optional: the TypeScript test needs node and npm (it installs `@anthropic-ai/sdk` into a temp folder),
the LiteLLM test a `litellm` command (`pip install 'litellm[proxy]'`, best in its own venv: point
$WORKSHOP_LITELLM at its `litellm`). Each is skipped with the reason when its tool is missing. Everything
runs on 127.0.0.1; LiteLLM gets a dead proxy for anything else, so it cannot reach the network.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import httpx
import pytest
from fastapi import Request
from fastapi.responses import StreamingResponse

from grader.classroom.serving import bind, in_thread
from tests.test_relay import INSTRUCTOR_KEY, FakeUpstream, relayed

pytestmark = pytest.mark.xdist_group("anthropic")  # the SDK's import, paid once, on test_relay.py's worker
TS_CLIENT = """
import Anthropic from "@anthropic-ai/sdk";
const ask = {model: "claude-sonnet-5-5", max_tokens: 64, messages: [{role: "user", content: "hi"}]};
const client = new Anthropic({baseURL: process.env.RELAY, apiKey: process.env.TOKEN, maxRetries: 0});
const reply = await client.messages.create(ask);
let text = "";
const stream = client.messages.stream(ask).on("text", (piece) => { text += piece; });
const final = await stream.finalMessage();
const counted = await client.messages.countTokens({model: ask.model, messages: ask.messages});
const models = [];
for await (const model of client.models.list()) models.push(model.id);
let refused = null;
try {
  await new Anthropic({baseURL: process.env.RELAY, apiKey: "class-not-a-token", maxRetries: 0}).messages.create(ask);
} catch (problem) {
  refused = {status: problem.status, type: problem.error?.error?.type};
}
console.log(JSON.stringify({reply: reply.content[0].text, text, usage: final.usage, counted: counted.input_tokens, models, refused}));
"""


@pytest.fixture(scope="session")
def typescript_sdk(tmp_path_factory):
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("no node/npm on PATH: the TypeScript SDK test needs them")
    folder = tmp_path_factory.mktemp("ts-sdk")
    (folder / "package.json").write_text('{"name": "relay-ts-check", "private": true, "type": "module"}')
    try:
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "@anthropic-ai/sdk"], cwd=folder,
                              capture_output=True, text=True, timeout=300, env={**os.environ, "npm_config_cache": str(folder / ".npm")})
    except subprocess.TimeoutExpired:
        pytest.skip("npm install @anthropic-ai/sdk took over 5 minutes")
    if done.returncode != 0:
        pytest.skip(f"npm could not install @anthropic-ai/sdk: {done.stderr.strip().splitlines()[-1:]}")
    (folder / "client.mjs").write_text(TS_CLIENT)
    return node, folder


def test_the_typescript_sdk_through_the_relay(store, typescript_sdk):
    node, folder = typescript_sdk
    upstream = FakeUpstream()
    _, token = store.join("Ada")
    with in_thread(upstream.app) as upstream_url, relayed(store, upstream_url) as url:
        done = subprocess.run([node, "client.mjs"], cwd=folder, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "RELAY": url, "TOKEN": token})
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen["reply"] == "hello from upstream" and seen["text"] == "streamed hello"
    assert seen["usage"]["output_tokens"] == 40 and seen["counted"] == 42 and seen["models"] == ["claude-sonnet-5-5"]
    assert seen["refused"] == {"status": 401, "type": "authentication_error"}
    ada = store.students()[0]
    assert (ada.tokens_in, ada.tokens_out, ada.requests, ada.reserved) == (120 + 200, 30 + 40, 2, 0)
    assert {request["key"] for request in upstream.seen} == {INSTRUCTOR_KEY}


def openai_chat(app) -> None:
    """An OpenAI-style chat completions route on the fake upstream: LiteLLM translates it to the Messages API itself."""

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        app.state.chats = [*getattr(app.state, "chats", []), body]
        chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "translated "}}]},
                  {"choices": [{"index": 0, "delta": {"content": "hello"}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                  {"choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}}]
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": body["model"]}
        if not body.get("stream"):
            return {**base, "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "translated hello"},
                                                                      "finish_reason": "stop"}], "usage": chunks[-1]["usage"]}

        async def events():
            for chunk in chunks:
                yield f"data: {json.dumps({**base, **chunk})}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


@pytest.fixture
def litellm_proxy(tmp_path):
    command = os.environ.get("WORKSHOP_LITELLM") or shutil.which("litellm")
    if not command:
        pytest.skip("no LiteLLM proxy: `pip install 'litellm[proxy]'` (in its own venv) and set WORKSHOP_LITELLM to its litellm")
    upstream = FakeUpstream()
    openai_chat(upstream.app)
    with in_thread(upstream.app) as upstream_url:
        free = bind("127.0.0.1", 0)
        port = free.getsockname()[1]
        free.close()
        models = [("claude-passthrough", "anthropic/claude-sonnet-5-5", upstream_url), ("claude-translated", "hosted_vllm/gpt-fake", f"{upstream_url}/v1")]
        (tmp_path / "litellm.yaml").write_text("model_list:\n" + "".join(
            f"  - model_name: {name}\n    litellm_params:\n      model: {model}\n      api_base: {base}\n      api_key: sk-upstream\n"
            for name, model, base in models) + "general_settings:\n  master_key: sk-litellm-master\n")
        offline = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
                   "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "HOME": str(tmp_path)}
        proxy = subprocess.Popen([command, "--config", str(tmp_path / "litellm.yaml"), "--host", "127.0.0.1", "--port", str(port)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, env={**os.environ, **offline})
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and proxy.poll() is None:
                try:
                    if httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.5)
            else:
                pytest.skip(f"the LiteLLM proxy did not start: {proxy.communicate(timeout=10)[0][-500:] if proxy.poll() is not None else 'timed out'}")
            yield url, upstream
        finally:
            proxy.terminate()
            try:
                proxy.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proxy.kill()
                proxy.communicate()


def test_a_litellm_proxy_as_the_upstream_is_charged_what_it_reports(store, litellm_proxy):
    import anthropic

    from grader.classroom.board import create_app
    from grader.classroom.relay import Relay

    proxy_url, upstream = litellm_proxy
    _, token = store.join("Ada")
    with in_thread(create_app(store, Relay(store, "sk-litellm-master", 100_000, proxy_url))) as url:
        client = anthropic.Anthropic(base_url=url, api_key=token, max_retries=0)
        ask = {"max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
        passed = client.messages.create(model="claude-passthrough", **ask)
        with client.messages.stream(model="claude-passthrough", **ask) as stream:
            passed_text = "".join(stream.text_stream)
        after_passthrough = store.students()[0].tokens
        with client.messages.stream(model="claude-translated", **ask) as stream:
            translated_text = "".join(stream.text_stream)
            translated = stream.get_final_message()
    assert passed.content[0].text == "hello from upstream" and passed_text == "streamed hello"
    assert after_passthrough == 120 + 30 + 200 + 40
    assert translated_text == "translated hello"
    ada = store.students()[0]
    # what LiteLLM itself reported for the translated stream (wherever it put the input tokens) is what was charged
    reported = translated.usage.input_tokens + translated.usage.output_tokens
    assert reported >= 1200 + 40 and ada.tokens - after_passthrough == reported and ada.reserved == 0
