"""The language model of Qwen2.5-VL (`qwen2_5_vl`, Qwen2_5_VLForConditionalGeneration;
its text_config `qwen2_5_vl_text`): Qwen2's decoder - biases on q, k, v and none on o,
sliding windows behind `use_sliding_window` - whose RoPE is M-RoPE: the rotary frequencies
split into `mrope_section` parts (temporal, height, width) rotated by three position ids.
On text the three ids are the same position, so M-RoPE is the 1-D RoPE of that position and
the language model runs on text exactly as tfcli's RoPE runs it (transformers reads the type
`mrope` as `default`, as here). Its head width is always hidden_size / heads (a `head_dim`
key means nothing to Qwen2_5_VLAttention)."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import BARE, LM, Architecture

# Qwen2_5_VLTextConfig() defaults, for the keys read
DEFAULTS: Config = llama.QWEN2_DEFAULTS | {
    "vocab_size": 152064, "hidden_size": 8192, "intermediate_size": 29568,
    "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
    "max_position_embeddings": 32768, "rms_norm_eps": 1e-5, "rope_theta": 1000000.0,
    "sliding_window": 4096, "max_window_layers": 80,
}
# the wrapper counted as its language model plus head; the bare text model
CLASSES: dict[str, Architecture] = {"Qwen2_5_VLForConditionalGeneration": LM,
                                    "Qwen2_5_VLTextModel": BARE}
_ROPE_KEYS = ("rope_parameters", "rope_scaling")


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    values = dict(c.values) | {"head_dim": None}
    for key in _ROPE_KEYS:
        section = c.section(key)
        if "mrope_section" in section.values:
            _check_sections(c, section)
        if _rope_type(section.values) == "mrope":
            values[key] = {k: v for k, v in section.values.items() if k != "type"} | {
                "rope_type": "default"}
    return llama.read_qwen(ConfigFields(values, c.file, c.prefix), arch)


def _rope_type(section: Config) -> object:
    return section.get("rope_type", section.get("type"))


def _check_sections(c: ConfigFields, section: ConfigFields) -> None:
    """mrope_section: positive integers that together cover the head's d_head / 2 frequencies
    (transformers' split of the rotary table would fail on any other)."""
    parts = section.values["mrope_section"]
    half = c.integer("hidden_size") // max(c.integer("num_attention_heads"), 1) // 2
    if (not isinstance(parts, list) or not 1 <= len(parts) <= 8
            or not all(isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in parts)
            or sum(parts) != half):
        raise section.error("mrope_section", f"expected positive integers that sum to d_head "
                                             f"/ 2 = {half}, got {shown(parts)}")
