"""GGUF tensor names (llama.cpp's) -> tfcli Weights paths, one Table per GGUF architecture.

llama.cpp names tensors the same way for every architecture (`blk.{i}.attn_q.weight`,
`blk.{i}.ffn_up.weight`, `output_norm.weight`) and stores matrices as PyTorch does,
(out, in): the `linear` transform. GPT-2's fused `attn_qkv` is (3d, d), cut at the spec's
widths (`split_linear`).
"""

from __future__ import annotations

from tfcli.checkpoints.names import Rule, Table, linear, norm, rule, stacked


def _common(b: str) -> list[Rule]:
    layer = "blk.{i}"
    return [
        rule("token_embd.weight", "token_embedding"),
        *norm(f"{layer}.attn_norm", f"{b}.attn_norm"),
        *linear(f"{layer}.attn_output", f"{b}.attn.wo", f"{b}.attn.bo"),
        *norm(f"{layer}.ffn_norm", f"{b}.ffn_norm"),
        *linear(f"{layer}.ffn_up", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.ffn_down", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm("output_norm", "decoder.final_norm"),
        rule("output.weight", "lm_head", "linear"),
    ]


def _llama_rules() -> list[Rule]:
    layer, b = "blk.{i}", "decoder.blocks.{i}"
    return [
        *_common(b),
        *(r for x, ours in (("q", "q"), ("k", "k"), ("v", "v"))
          for r in linear(f"{layer}.attn_{x}", f"{b}.attn.w{ours}", f"{b}.attn.b{ours}")),
        rule(f"{layer}.attn_q_norm.weight", f"{b}.attn.q_norm.scale"),
        rule(f"{layer}.attn_k_norm.weight", f"{b}.attn.k_norm.scale"),
        *linear(f"{layer}.ffn_gate", f"{b}.ffn.w_gate", f"{b}.ffn.b_gate"),
        # mixture of experts (qwen3moe, olmoe): the router and each block's stacked experts,
        # (E, out, in) as torch stores each expert
        rule(f"{layer}.ffn_gate_inp.weight", f"{b}.ffn.router", "linear"),
        *(stacked(f"{layer}.ffn_{p}_exps.weight", f"{b}.ffn.experts.{{e}}.w_{p}", "linear")
          for p in ("gate", "up", "down")),
    ]


def _gpt2_rules() -> list[Rule]:
    layer, b = "blk.{i}", "decoder.blocks.{i}"
    qkv = tuple(f"{b}.attn.{x}" for x in ("wq", "wk", "wv"))
    bqkv = tuple(f"{b}.attn.{x}" for x in ("bq", "bk", "bv"))
    return [
        *_common(b),
        rule("position_embd.weight", "position_embedding"),
        Rule(f"{layer}.attn_qkv.weight", qkv, "split_linear"),
        Rule(f"{layer}.attn_qkv.bias", bqkv, "split_linear"),
    ]


def _gemma_rules() -> list[Rule]:
    layer, b = "blk.{i}", "decoder.blocks.{i}"
    return [
        *_llama_rules(),
        rule(f"{layer}.post_attention_norm.weight", f"{b}.attn_post_norm.scale"),
        rule(f"{layer}.post_ffw_norm.weight", f"{b}.ffn_post_norm.scale"),
    ]


LLAMA = Table(bases=("",), anchor="token_embd.weight", rules=tuple(_llama_rules()),
              tied_copies=("output.weight",),
              # RoPE's divisors (read into the spec's rope_scaling), not a parameter
              ignored=(r"^rope_freqs\.weight$",))
GPT2 = Table(bases=("",), anchor="token_embd.weight", rules=tuple(_gpt2_rules()),
             tied_copies=("output.weight",))

GEMMA = Table(bases=("",), anchor="token_embd.weight", rules=tuple(_gemma_rules()),
              tied_copies=("output.weight",))

# GGUF general.architecture -> its table
GGUF_TABLES: dict[str, Table] = {"llama": LLAMA, "qwen2": LLAMA, "qwen3": LLAMA, "gpt2": GPT2,
                                 "gemma2": GEMMA, "gemma3": GEMMA, "granite": LLAMA,
                                 "starcoder2": LLAMA, "qwen3moe": LLAMA, "olmoe": LLAMA,
                                 "cohere2": LLAMA, "smollm3": LLAMA}
