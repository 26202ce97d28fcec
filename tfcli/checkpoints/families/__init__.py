"""Model families tfcli reads: one module per family (or group of close families), holding
all tfcli knows of it - the defaults of its transformers config class, its config.json reader
(-> spec fields) and its checkpoint name Table. Family knowledge lives here and in
tfcli/checkpoints/heads.py (its model classes) only; the engine reads spec fields.

Adding a family: a module here with DEFAULTS, a reader (families.common.Reader), a Table and
its model classes (heads.decoder_classes for a LLaMA-like one); one FAMILIES row per model_type
below. The families built before rows carried their classes keep them in heads.ARCHITECTURES.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfcli.checkpoints.families import bert, falcon, gpt2, llama, olmo2, phi3, t5
from tfcli.checkpoints.families import gpt_neox, gptj, phi, stablelm
from tfcli.checkpoints.families import gemma
from tfcli.checkpoints.families import qwen_moe
from tfcli.checkpoints.families import albert, distilbert, electra, roberta
from tfcli.checkpoints.families import deepseek
from tfcli.checkpoints.families import bart
from tfcli.checkpoints.families import modernbert
from tfcli.checkpoints.families import deberta
from tfcli.checkpoints.families import smollm3
from tfcli.checkpoints.families import granite
from tfcli.checkpoints.families import gpt_oss
from tfcli.checkpoints.families import olmoe
from tfcli.checkpoints.families import starcoder2
from tfcli.checkpoints.families import cohere
from tfcli.checkpoints.families import glm
from tfcli.checkpoints.families import ernie, exaone4, seed_oss
from tfcli.checkpoints.families import multimodal, phimoe
from tfcli.checkpoints.families import hunyuan, llama4, qwen_vl
from tfcli.checkpoints.families.common import Reader
from tfcli.checkpoints.fields import Config
from tfcli.checkpoints.heads import ARCHITECTURES, Architecture
from tfcli.checkpoints.names import Table, with_classifier


@dataclass(frozen=True)
class Family:
    defaults: Config  # the transformers config class's defaults for the keys read
    read: Reader
    table: Table
    # its model classes, the first what an empty `architectures` means; None: heads.ARCHITECTURES'
    classes: dict[str, Architecture] | None = None


FAMILIES: dict[str, Family] = {
    "gpt2": Family(gpt2.DEFAULTS, gpt2.read, gpt2.TABLE),
    "bert": Family(bert.DEFAULTS, bert.read, bert.TABLE),
    "llama": Family(llama.LLAMA_DEFAULTS, llama.read_llama, llama.TABLE),
    "mistral": Family(llama.MISTRAL_DEFAULTS, llama.read_llama, llama.TABLE),
    "mixtral": Family(llama.MIXTRAL_DEFAULTS, llama.read_llama, llama.TABLE),
    "qwen2": Family(llama.QWEN2_DEFAULTS, llama.read_qwen, llama.TABLE),
    "qwen3": Family(llama.QWEN3_DEFAULTS, llama.read_qwen, llama.TABLE),
    "qwen2_moe": Family(qwen_moe.QWEN2_MOE_DEFAULTS, qwen_moe.read_qwen2_moe, qwen_moe.TABLE),
    "qwen3_moe": Family(qwen_moe.QWEN3_MOE_DEFAULTS, qwen_moe.read_qwen3_moe, qwen_moe.TABLE),
    "deepseek_v2": Family(deepseek.DEEPSEEK_V2_DEFAULTS, deepseek.read_deepseek_v2, deepseek.TABLE),
    "deepseek_v3": Family(deepseek.DEEPSEEK_V3_DEFAULTS, deepseek.read_deepseek_v3,
                          deepseek.V3_TABLE),
    "t5": Family(t5.DEFAULTS, t5.read, t5.TABLE),
    "mt5": Family(t5.MT5_DEFAULTS, t5.read_mt5, t5.TABLE),
    "umt5": Family(t5.UMT5_DEFAULTS, t5.read_umt5, t5.UMT5_TABLE),
    "bart": Family(bart.DEFAULTS, bart.read, bart.TABLE),
    "gpt_neox": Family(gpt_neox.DEFAULTS, gpt_neox.read, gpt_neox.TABLE),
    "gptj": Family(gptj.DEFAULTS, gptj.read, gptj.TABLE),
    "phi": Family(phi.DEFAULTS, phi.read, phi.TABLE),
    "stablelm": Family(stablelm.DEFAULTS, stablelm.read, stablelm.TABLE),
    "phi3": Family(phi3.DEFAULTS, phi3.read, phi3.TABLE),
    "olmo2": Family(olmo2.DEFAULTS, olmo2.read, olmo2.TABLE),
    "olmoe": Family(olmoe.DEFAULTS, olmoe.read, olmoe.TABLE, olmoe.CLASSES),
    "cohere": Family(cohere.DEFAULTS, cohere.read, cohere.TABLE, cohere.CLASSES),
    "cohere2": Family(cohere.COHERE2_DEFAULTS, cohere.read_cohere2, cohere.TABLE,
                      cohere.COHERE2_CLASSES),
    "glm": Family(glm.DEFAULTS, glm.read, glm.TABLE, glm.CLASSES),
    "glm4": Family(glm.DEFAULTS, glm.read, glm.TABLE, glm.GLM4_CLASSES),
    "glm4_moe": Family(glm.GLM4_MOE_DEFAULTS, glm.read_moe, glm.MOE_TABLE, glm.GLM4_MOE_CLASSES),
    "seed_oss": Family(seed_oss.DEFAULTS, seed_oss.read, seed_oss.TABLE, seed_oss.CLASSES),
    "ernie4_5": Family(ernie.DEFAULTS, ernie.read, ernie.TABLE, ernie.CLASSES),
    "ernie4_5_moe": Family(ernie.MOE_DEFAULTS, ernie.read_moe, ernie.MOE_TABLE,
                           ernie.MOE_CLASSES),
    "exaone4": Family(exaone4.DEFAULTS, exaone4.read, exaone4.TABLE, exaone4.CLASSES),
    "phimoe": Family(phimoe.DEFAULTS, phimoe.read, phimoe.TABLE, phimoe.CLASSES),
    "starcoder2": Family(starcoder2.DEFAULTS, starcoder2.read, starcoder2.TABLE,
                         starcoder2.CLASSES),
    "gemma": Family(gemma.GEMMA_DEFAULTS, gemma.read_gemma, gemma.GEMMA_TABLE),
    "gemma2": Family(gemma.GEMMA2_DEFAULTS, gemma.read_gemma2, gemma.GEMMA2_TABLE),
    "gemma3_text": Family(gemma.GEMMA3_DEFAULTS, gemma.read_gemma3, gemma.GEMMA2_TABLE),
    "falcon": Family(falcon.DEFAULTS, falcon.read, falcon.TABLE),
    "roberta": Family(roberta.ROBERTA_DEFAULTS, roberta.read, roberta.TABLE),
    "xlm-roberta": Family(roberta.XLM_ROBERTA_DEFAULTS, roberta.read, roberta.TABLE),
    "distilbert": Family(distilbert.DEFAULTS, distilbert.read, distilbert.TABLE),
    "electra": Family(electra.DEFAULTS, electra.read, electra.TABLE),
    "albert": Family(albert.DEFAULTS, albert.read, albert.TABLE),
    "modernbert": Family(modernbert.DEFAULTS, modernbert.read, modernbert.TABLE),
    "deberta-v2": Family(deberta.DEFAULTS, deberta.read, deberta.TABLE),
    "smollm3": Family(smollm3.DEFAULTS, smollm3.read, smollm3.TABLE, smollm3.CLASSES),
    "granite": Family(granite.DEFAULTS, granite.read, granite.TABLE, granite.CLASSES),
    "gpt_oss": Family(gpt_oss.DEFAULTS, gpt_oss.read, gpt_oss.TABLE, gpt_oss.CLASSES),
    "granitemoe": Family(granite.MOE_DEFAULTS, granite.read_moe, granite.MOE_TABLE,
                         granite.MOE_CLASSES),
    "llama4_text": Family(llama4.DEFAULTS, llama4.read, llama4.TABLE, llama4.CLASSES),
    "hunyuan_v1_dense": Family(hunyuan.DEFAULTS, hunyuan.read, hunyuan.TABLE, hunyuan.CLASSES),
    "qwen2_5_vl_text": Family(qwen_vl.DEFAULTS, qwen_vl.read, llama.TABLE, qwen_vl.CLASSES),
}
# every family's table with the classifier of the classification heads (names.with_classifier)
TABLES: dict[str, Table] = {kind: with_classifier(family.table) for kind, family in FAMILIES.items()}
# model_type -> class name -> Architecture
CLASSES: dict[str, dict[str, Architecture]] = {
    kind: family.classes or ARCHITECTURES[kind] for kind, family in FAMILIES.items()}
# class name -> model_type, for configs that name only `architectures` (the wrappers' too)
CLASS_TYPES: dict[str, str] = {name: kind for kind, classes in
                               (CLASSES | multimodal.CLASSES).items() for name in classes}
# Families whose configs name each other's classes (a Mistral fine-tune saved as LlamaForCausalLM).
_LLAMA_LIKE = ("llama", "mistral", "mixtral")


def classes_for(kind: str) -> dict[str, Architecture]:
    """The classes a config of model_type `kind` may name."""
    if kind in _LLAMA_LIKE:
        return {name: a for k in _LLAMA_LIKE for name, a in CLASSES[k].items()}
    return CLASSES[kind]


def table_for(config: Config, kind: str) -> Table:
    """The checkpoint table of a config.json of model_type `kind` (model_type() has checked it):
    its family's, or for a vision-language wrapper its language model's under the wrapper's
    prefixes (multimodal.py)."""
    if kind in multimodal.WRAPPERS:
        text = str(multimodal.text_config(config, kind)["model_type"])
        return multimodal.wrapped_table(TABLES[text])
    return TABLES[kind]
