"""The text part of vision-language wrappers: Gemma 3 (`gemma3`, Gemma3ForConditionalGeneration),
Mistral Small 3.1 / 3.2 (`mistral3`), LLaVA (`llava`), Llama 4 (`llama4`) and Qwen2.5-VL
(`qwen2_5_vl`). Their config.json nests the language model in `text_config` (Qwen2.5-VL's
published files keep its keys at the top level); tfcli counts and runs that model - exactly
as transformers builds `model.language_model` plus `lm_head`, tied as the wrapper's top-level
`tie_word_embeddings` says - and says everywhere (the spec's description, `params`' notes and
JSON, the checkpoint verdict) that the vision tower and the multi-modal projector are not
counted.

Their checkpoints store the language model under `model.language_model.` (transformers 5) or
`language_model.model.` (older saves, and Llama 4, whose wrapper holds a whole
Llama4ForCausalLM) or `model.` (older Qwen2.5-VL saves), its head as `lm_head.` or
`language_model.lm_head.`; the vision tower (Llama 4: vision_model, Qwen2.5-VL: visual) and
projector tensors are set aside by name."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tfcli.checkpoints.fields import Config
from tfcli.checkpoints.heads import LM, Architecture
from tfcli.checkpoints.names import Table


@dataclass(frozen=True)
class Wrapper:
    text_type: str  # the language model's model_type when text_config names none
    lm_class: str  # the causal-LM class its language model and head are counted as
    uncounted: str  # what is not counted, in words
    tie: bool  # the wrapper config class's tie_word_embeddings default
    # a config.json without text_config keeps the language model's keys at its top level
    # (Qwen2.5-VL's published files), not the text config class's defaults
    flat: bool = False


TOWERS = "the vision tower and the multi-modal projector"
WRAPPERS: dict[str, Wrapper] = {
    "gemma3": Wrapper("gemma3_text", "Gemma3ForCausalLM", f"{TOWERS} (SigLIP)", True),
    "mistral3": Wrapper("mistral", "MistralForCausalLM", f"{TOWERS} (Pixtral)", True),
    "llava": Wrapper("llama", "LlamaForCausalLM", TOWERS, False),
    "llama4": Wrapper("llama4_text", "Llama4ForCausalLM", TOWERS, False),
    "qwen2_5_vl": Wrapper("qwen2_5_vl_text", "Qwen2_5_VLForConditionalGeneration",
                          f"{TOWERS} (visual, its patch merger the projector)", False,
                          flat=True),
}
CLASSES: dict[str, dict[str, Architecture]] = {
    "gemma3": {"Gemma3ForConditionalGeneration": LM},
    "mistral3": {"Mistral3ForConditionalGeneration": LM},
    "llava": {"LlavaForConditionalGeneration": LM},
    "llama4": {"Llama4ForConditionalGeneration": LM},
    "qwen2_5_vl": {"Qwen2_5_VLForConditionalGeneration": LM},
}
# the tensors of what is not counted, by name (re.search)
UNCOUNTED = r"^(model\.)?(vision_tower|vision_model|visual|multi_modal_projector)\."


_WRAPPER_KEYS = frozenset({"model_type", "architectures", "vision_config", "text_config"})


def text_config(config: Config, kind: str) -> Config:
    """The language model's config.json: text_config, its model_type and class made explicit,
    tied as the wrapper is (transformers ties the wrapper's lm_head by its own top-level key)."""
    wrapper = WRAPPERS[kind]
    nested = config.get("text_config")
    if isinstance(nested, dict):
        text = dict(nested)
    elif wrapper.flat:
        text = {k: v for k, v in config.items() if k not in _WRAPPER_KEYS}
    else:
        text = {}
    tie = config.get("tie_word_embeddings", wrapper.tie)
    return text | {"model_type": text.get("model_type") or wrapper.text_type,
                   "architectures": [wrapper.lm_class], "tie_word_embeddings": tie}


def wrapped_table(table: Table) -> Table:
    """The language model's table under the wrapper's prefixes, its towers set aside."""
    return replace(
        table, bases=("model.language_model.", "language_model.model.", *table.bases),
        ignored=(*table.ignored, UNCOUNTED),
        renames=(*table.renames, ("language_model.lm_head.weight", "lm_head.weight")))
