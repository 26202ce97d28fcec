"""Which Hugging Face model classes (config.json `architectures`) tfcli builds, and how.

A class is one of three things: what tfcli builds (GPT2LMHeadModel, LlamaForCausalLM, the bare
BertModel / LlamaModel without an output head); a task head on a body tfcli builds (BertForMaskedLM,
LlamaForSequenceClassification): the spec is that body, marked `body_only` so every count says so;
or refused by name (T5EncoderModel: counting it as T5 would add a whole decoder). A class that is
not listed is refused too: counting an unknown class as its family's LM is a count of another
model. Parameter names of each head are those of transformers 5 (checked on the meta device in
tests/checkpoints/test_heads.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Architecture:
    lm_head: bool  # has an output projection to vocabulary logits (tied or not)
    head: str = ""  # the task head tfcli does not build ("": the class is built whole)
    pooler: bool = True  # BERT's add_pooling_layer


LM = Architecture(lm_head=True)
BARE = Architecture(lm_head=False)


def _decoder_family(prefix: str, qa_head: str | None = "qa_outputs") -> dict[str, Architecture]:
    """The classes of a LLaMA-like family; qa_head None: it has no *ForQuestionAnswering."""
    classes = {
        f"{prefix}ForCausalLM": LM, f"{prefix}Model": BARE,
        f"{prefix}ForSequenceClassification": Architecture(False, "score"),
        f"{prefix}ForTokenClassification": Architecture(False, "score"),
    }
    if qa_head is not None:
        classes[f"{prefix}ForQuestionAnswering"] = Architecture(False, qa_head)
    return classes


# model_type -> class name -> Architecture; the first class is what an empty `architectures` means
ARCHITECTURES: dict[str, dict[str, Architecture]] = {
    "gpt2": {
        "GPT2LMHeadModel": LM, "GPT2Model": BARE,
        "GPT2ForSequenceClassification": Architecture(False, "score"),
        "GPT2ForTokenClassification": Architecture(False, "classifier"),
        "GPT2ForQuestionAnswering": Architecture(False, "qa_outputs"),
    },
    "bert": {
        "BertModel": BARE,
        "BertForMaskedLM": Architecture(False, "cls.predictions", pooler=False),
        "BertLMHeadModel": Architecture(False, "cls.predictions", pooler=False),
        "BertForPreTraining": Architecture(False, "cls.predictions + cls.seq_relationship"),
        "BertForNextSentencePrediction": Architecture(False, "cls.seq_relationship"),
        "BertForSequenceClassification": Architecture(False, "classifier"),
        "BertForMultipleChoice": Architecture(False, "classifier"),
        "BertForTokenClassification": Architecture(False, "classifier", pooler=False),
        "BertForQuestionAnswering": Architecture(False, "qa_outputs", pooler=False),
    },
    "llama": _decoder_family("Llama"),
    "mistral": _decoder_family("Mistral"),
    "mixtral": _decoder_family("Mixtral"),
    "qwen2": _decoder_family("Qwen2"),
    "qwen3": _decoder_family("Qwen3"),
    "qwen2_moe": _decoder_family("Qwen2Moe"),
    "qwen3_moe": _decoder_family("Qwen3Moe"),
    "deepseek_v2": {name: a for name, a in _decoder_family("DeepseekV2", qa_head=None).items()
                    if not name.endswith("ForTokenClassification")},  # V2 has no such class
    "deepseek_v3": _decoder_family("DeepseekV3", qa_head=None),
    "phi3": _decoder_family("Phi3", qa_head=None),
    "gemma": _decoder_family("Gemma", qa_head=None),
    "gemma2": _decoder_family("Gemma2", qa_head=None),
    "gemma3_text": {"Gemma3ForCausalLM": LM, "Gemma3TextModel": BARE,
                    "Gemma3TextForSequenceClassification": Architecture(False, "score")},
    "olmo2": {"Olmo2ForCausalLM": LM, "Olmo2Model": BARE,
              "Olmo2ForSequenceClassification": Architecture(False, "score")},
    "falcon": {"FalconForCausalLM": LM, "FalconModel": BARE,
               "FalconForSequenceClassification": Architecture(False, "score"),
               "FalconForTokenClassification": Architecture(False, "classifier"),
               "FalconForQuestionAnswering": Architecture(False, "qa_outputs")},
    "gpt_neox": {
        "GPTNeoXForCausalLM": LM, "GPTNeoXModel": BARE,
        "GPTNeoXForSequenceClassification": Architecture(False, "score"),
        "GPTNeoXForTokenClassification": Architecture(False, "classifier"),
        "GPTNeoXForQuestionAnswering": Architecture(False, "qa_outputs"),
    },
    "gptj": {"GPTJForCausalLM": LM, "GPTJModel": BARE,
             "GPTJForSequenceClassification": Architecture(False, "score"),
             "GPTJForQuestionAnswering": Architecture(False, "qa_outputs")},
    "phi": {"PhiForCausalLM": LM, "PhiModel": BARE,
            "PhiForSequenceClassification": Architecture(False, "score"),
            "PhiForTokenClassification": Architecture(False, "score")},
    "stablelm": {"StableLmForCausalLM": LM, "StableLmModel": BARE,
                 "StableLmForSequenceClassification": Architecture(False, "score"),
                 "StableLmForTokenClassification": Architecture(False, "score")},
    "t5": {
        "T5ForConditionalGeneration": LM, "T5Model": BARE,
        "T5ForQuestionAnswering": Architecture(False, "qa_outputs"),
    },
}

# Classes refused with a reason, beyond "not listed".
REFUSED: dict[str, str] = {
    "T5EncoderModel": "an encoder-only T5 (counting it as T5 would add the whole decoder)",
    "T5ForTokenClassification": "an encoder-only T5 with a classifier (counting it as T5 would "
                                "add the whole decoder)",
    "T5ForSequenceClassification": "a T5 nested under 'transformer.' with a classification head",
    "GPT2DoubleHeadsModel": "a GPT-2 with a multiple-choice head beside the LM head",
}

# class name -> model_type, for configs that name only `architectures`
ARCHITECTURE_TYPES: dict[str, str] = {
    name: kind for kind, classes in ARCHITECTURES.items() for name in classes
}


def body_only_label(name: str, arch: Architecture) -> str | None:
    """The spec's `body_only` text for a task-head class, None for a class built whole."""
    return f"{name} ({arch.head} head not built)" if arch.head else None

# Families whose configs name each other's classes (a Mistral fine-tune saved as LlamaForCausalLM).
_LLAMA_LIKE = ("llama", "mistral", "mixtral")


def classes_for(kind: str) -> dict[str, Architecture]:
    """The classes a config of model_type `kind` may name."""
    if kind in _LLAMA_LIKE:
        return {name: a for k in _LLAMA_LIKE for name, a in ARCHITECTURES[k].items()}
    return ARCHITECTURES[kind]
