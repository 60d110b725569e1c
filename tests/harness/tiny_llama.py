"""A tiny llama-architecture GGUF model for running the real llama-server in tests.

Two layers, 64-dimensional, random weights: it writes nonsense, but llama-server
loads it, applies its chat template (ChatML, with a tools section), streams
chat completions and reports `timings`, so everything around the model is real.
The vocabulary is byte-level BPE (GPT-2's byte-to-unicode pieces) so that
every piece is plain text, plus ChatML's special tokens.
"""

from pathlib import Path

import gguf
import numpy as np

EMBEDDING = 64
LAYERS = 2
HEADS = 4
FEED_FORWARD = 128
# As long as the context tests ask llama-server for: it gives a slot no more
# than the model's training context.
CONTEXT = 32768
SPECIAL_TOKENS = ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
MERGES = ["Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r"]

# Qwen2.5's ChatML template with tools, which llama-server knows how to parse.
CHAT_TEMPLATE = """\
{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""


def byte_pieces() -> list[str]:
    """Return GPT-2's printable stand-in for each of the 256 bytes."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    pieces = {}
    extra = 0
    for byte in range(256):
        if byte in printable:
            pieces[byte] = chr(byte)
        else:
            pieces[byte] = chr(256 + extra)
            extra += 1
    return [pieces[byte] for byte in range(256)]


def write_tiny_gguf(path: Path, seed: int = 0) -> Path:
    """Write the model to `path` (about 0.5 MB) and return the path."""
    rng = np.random.default_rng(seed)
    tokens = byte_pieces() + [merge.replace(" ", "") for merge in MERGES]
    token_types = [gguf.TokenType.NORMAL] * len(tokens)
    tokens += SPECIAL_TOKENS
    token_types += [gguf.TokenType.CONTROL] * len(SPECIAL_TOKENS)
    vocab = len(tokens)
    im_end = tokens.index("<|im_end|>")

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("desktop-assistant-tiny-test")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBEDDING)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(EMBEDDING // HEADS)
    writer.add_vocab_size(vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(tokens.index("<|im_start|>"))
    writer.add_eos_token_id(im_end)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    writer.add_tensor("token_embd.weight", weights(vocab, EMBEDDING))
    writer.add_tensor("output_norm.weight", np.ones(EMBEDDING, dtype=np.float32))
    writer.add_tensor("output.weight", weights(vocab, EMBEDDING))
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(EMBEDDING, np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{block}.{name}.weight", weights(EMBEDDING, EMBEDDING))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(EMBEDDING, np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", weights(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(f"{block}.ffn_up.weight", weights(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(f"{block}.ffn_down.weight", weights(EMBEDDING, FEED_FORWARD))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
