"""Which Hugging Face model classes (config.json `architectures`) tfcli builds, and how.

A class is its family's body with one head (spec.head, tfcli/spec/head.py): the causal / seq2seq
LM head (GPT2LMHeadModel, LlamaForCausalLM), none (BertModel, LlamaModel), masked_lm
(BertForMaskedLM), sequence_classification (LlamaForSequenceClassification's `score` on the last
real token, BertForSequenceClassification's pooler + classifier), token_classification (a
classifier on every token; *ForQuestionAnswering is one of 2 labels, start and end). Each class
is counted and run whole, exactly as transformers builds it (tests/checkpoints/test_heads.py
checks every class listed here on the meta device). A class not listed is refused by name:
counting it as its family's LM would count another model; REFUSED says why for some.
A new family's heads are data here (which kind, pooler or not, a fixed label count) plus its
table's tensor names: RobertaForMaskedLM is MASKED_LM with lm_head.dense / lm_head.layer_norm /
lm_head.decoder / lm_head.bias; RobertaForSequenceClassification SEQUENCE with its
classifier.dense as the pooler (tanh) and classifier.out_proj as the classifier; ELECTRA's the
same with pooler_activation gelu, DistilBERT's pre_classifier with relu; *ForTokenClassification
TOKENS with `classifier`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Architecture:
    lm_head: bool  # has an output projection to vocabulary logits (tied or not)
    head: str = ""  # spec.head of a task head ("": lm or none, as lm_head says)
    pooler: bool = True  # BERT's add_pooling_layer
    labels: int | None = None  # a class's fixed label count (QA: 2), else config num_labels
    encoder_only: bool = False  # an encoder-decoder family's encoder alone (T5EncoderModel)
    classifier_dense: bool = False  # spec.classifier_dense (ELECTRA's discriminator)


LM = Architecture(lm_head=True)
BARE = Architecture(lm_head=False)
MASKED_LM = Architecture(False, "masked_lm", pooler=False)
SEQUENCE = Architecture(False, "sequence_classification")
TOKENS = Architecture(False, "token_classification", pooler=False)
QA = Architecture(False, "token_classification", pooler=False, labels=2)  # start, end logits
# BERT-like, T5 and BART question answering: qa_outputs of config num_labels outputs (2 by
# default), where the decoders' generic class fixes 2
QA_LABELS = Architecture(False, "token_classification", pooler=False)


def decoder_classes(prefix: str, qa_head: str | None = "qa_outputs") -> dict[str, Architecture]:
    """The classes of a LLaMA-like family; qa_head None: it has no *ForQuestionAnswering."""
    classes = {
        f"{prefix}ForCausalLM": LM, f"{prefix}Model": BARE,
        f"{prefix}ForSequenceClassification": SEQUENCE,
        f"{prefix}ForTokenClassification": TOKENS,
    }
    if qa_head is not None:
        classes[f"{prefix}ForQuestionAnswering"] = QA
    return classes


# model_type -> class name -> Architecture; the first class is what an empty `architectures` means
ARCHITECTURES: dict[str, dict[str, Architecture]] = {
    "gpt2": {
        "GPT2LMHeadModel": LM, "GPT2Model": BARE,
        "GPT2ForSequenceClassification": SEQUENCE,
        "GPT2ForTokenClassification": TOKENS,
        "GPT2ForQuestionAnswering": QA,
    },
    "bert": {
        "BertModel": BARE,
        "BertForMaskedLM": MASKED_LM,
        "BertLMHeadModel": MASKED_LM,  # is_decoder false (the reader refuses true): bidirectional
        # cls.seq_relationship: 2 labels (is next, is not) on the pooler, whatever num_labels
        "BertForNextSentencePrediction": Architecture(False, "sequence_classification", labels=2),
        "BertForSequenceClassification": SEQUENCE,
        "BertForMultipleChoice": Architecture(False, "sequence_classification", labels=1),
        "BertForTokenClassification": TOKENS,
        "BertForQuestionAnswering": QA_LABELS,
    },
    "llama": decoder_classes("Llama"),
    "mistral": decoder_classes("Mistral"),
    "mixtral": decoder_classes("Mixtral"),
    "qwen2": decoder_classes("Qwen2"),
    "qwen3": decoder_classes("Qwen3"),
    "qwen2_moe": decoder_classes("Qwen2Moe"),
    "qwen3_moe": decoder_classes("Qwen3Moe"),
    "deepseek_v2": {name: a for name, a in decoder_classes("DeepseekV2", qa_head=None).items()
                    if not name.endswith("ForTokenClassification")},  # V2 has no such class
    "deepseek_v3": decoder_classes("DeepseekV3", qa_head=None),
    "phi3": decoder_classes("Phi3", qa_head=None),
    "gemma": decoder_classes("Gemma", qa_head=None),
    "gemma2": decoder_classes("Gemma2", qa_head=None),
    "gemma3_text": {"Gemma3ForCausalLM": LM, "Gemma3TextModel": BARE,
                    "Gemma3TextForSequenceClassification": SEQUENCE},
    "olmo2": {"Olmo2ForCausalLM": LM, "Olmo2Model": BARE,
              "Olmo2ForSequenceClassification": SEQUENCE},
    "falcon": {"FalconForCausalLM": LM, "FalconModel": BARE,
               "FalconForSequenceClassification": SEQUENCE,
               "FalconForTokenClassification": TOKENS,
               "FalconForQuestionAnswering": QA},
    "gpt_neox": {
        "GPTNeoXForCausalLM": LM, "GPTNeoXModel": BARE,
        "GPTNeoXForSequenceClassification": SEQUENCE,
        "GPTNeoXForTokenClassification": TOKENS,
        "GPTNeoXForQuestionAnswering": QA,
    },
    "gptj": {"GPTJForCausalLM": LM, "GPTJModel": BARE,
             "GPTJForSequenceClassification": SEQUENCE,
             "GPTJForQuestionAnswering": QA},
    "phi": {"PhiForCausalLM": LM, "PhiModel": BARE,
            "PhiForSequenceClassification": SEQUENCE,
            "PhiForTokenClassification": TOKENS},
    "stablelm": {"StableLmForCausalLM": LM, "StableLmModel": BARE,
                 "StableLmForSequenceClassification": SEQUENCE,
                 "StableLmForTokenClassification": TOKENS},
    "t5": {
        "T5ForConditionalGeneration": LM, "T5Model": BARE,
        "T5EncoderModel": Architecture(False, encoder_only=True),
        "T5ForTokenClassification": Architecture(False, "token_classification",
                                                 encoder_only=True),
        "T5ForQuestionAnswering": QA_LABELS,  # on the decoder's output
    },
    "mt5": {"MT5ForConditionalGeneration": LM, "MT5Model": BARE,
            "MT5EncoderModel": Architecture(False, encoder_only=True),
            "MT5ForQuestionAnswering": QA_LABELS},
    "umt5": {"UMT5ForConditionalGeneration": LM, "UMT5Model": BARE,
             "UMT5EncoderModel": Architecture(False, encoder_only=True),  # Wan's text encoder
             "UMT5ForQuestionAnswering": QA_LABELS},
    "bart": {"BartForConditionalGeneration": LM, "BartModel": BARE,
             "BartForQuestionAnswering": QA_LABELS},  # qa_outputs on the decoder's output
}


def _encoder_family(prefix: str, body: Architecture, multiple_choice: bool = True,
                    masked_lm: bool = True, qa: Architecture = QA_LABELS) -> dict[str, Architecture]:
    """The classes of an encoder family of issue 16. A classification head that reads the
    first token through a dense layer and an activation is the pooler as data: RoBERTa's and
    ELECTRA's classifier.dense + out_proj, DistilBERT's pre_classifier + classifier (the
    readers set pooler_activation); *ForMultipleChoice scores each choice with 1 label."""
    classes = {f"{prefix}Model": body}
    if masked_lm:
        classes[f"{prefix}ForMaskedLM"] = MASKED_LM
    classes |= {f"{prefix}ForSequenceClassification": SEQUENCE,
                f"{prefix}ForTokenClassification": TOKENS, f"{prefix}ForQuestionAnswering": qa}
    if multiple_choice:
        classes[f"{prefix}ForMultipleChoice"] = Architecture(False, "sequence_classification",
                                                             labels=1)
    return classes


# RobertaModel, XLMRobertaModel and AlbertModel have a pooler (add_pooling_layer=True);
# ElectraModel and DistilBertModel none. ALBERT's and ELECTRA's vocabulary heads map d_model to
# the embedding_dim-wide tied table (Spec.logits_width).
ARCHITECTURES |= {
    "roberta": _encoder_family("Roberta", BARE),
    "xlm-roberta": _encoder_family("XLMRoberta", BARE),
    # DistilBertForQuestionAnswering raises unless num_labels is 2
    "distilbert": _encoder_family("DistilBert", Architecture(False, pooler=False), qa=QA),
    "electra": _encoder_family("Electra", Architecture(False, pooler=False),
                               multiple_choice=False) | {
        # the discriminator: discriminator_predictions.dense + hidden_act on every token, then
        # dense_prediction, one logit per token (replaced or not)
        "ElectraForPreTraining": Architecture(False, "token_classification", pooler=False,
                                              labels=1, classifier_dense=True)},
    "albert": _encoder_family("Albert", BARE),
    # DebertaV2Model has no pooler; its classification heads' ContextPooler (dense +
    # pooler_hidden_act on the first token) is the pooler
    "deberta-v2": _encoder_family("DebertaV2", Architecture(False, pooler=False)),
}
# ModernBERT: every task head runs ModernBertPredictionHead (dense, classifier_activation, norm)
# before its classifier - classifier_dense and the reader's classifier_norm; its sequence and
# multiple-choice classifiers read the first token or the real tokens' mean (classifier_pooling)
_MODERNBERT_HEAD = Architecture(False, "token_classification", pooler=False,
                                classifier_dense=True)
ARCHITECTURES["modernbert"] = {
    "ModernBertModel": Architecture(False, pooler=False),
    "ModernBertForMaskedLM": MASKED_LM,
    "ModernBertForSequenceClassification": Architecture(
        False, "sequence_classification", pooler=False, classifier_dense=True),
    "ModernBertForTokenClassification": _MODERNBERT_HEAD,
    "ModernBertForQuestionAnswering": _MODERNBERT_HEAD,  # classifier of config num_labels
    "ModernBertForMultipleChoice": Architecture(False, "sequence_classification", pooler=False,
                                                labels=1, classifier_dense=True),
}
ENCODER_REFUSED: dict[str, str] = {
    "AlbertForPreTraining": "two heads at once (masked-LM and sentence-order prediction)",
    "ElectraForMultipleChoice": "a sequence-summary head",
    "RobertaForCausalLM": "a causal RoBERTa (is_decoder)",
    "XLMRobertaForCausalLM": "a causal XLM-RoBERTa (is_decoder)",
}

# Classes refused with a reason, beyond "not listed".
REFUSED: dict[str, str] = {
    "BertForPreTraining": "two heads at once (masked-LM and next-sentence prediction)",
    "T5ForSequenceClassification": "a T5 nested under 'transformer.' with a classification head",
    "MT5ForSequenceClassification": "an mT5 nested under 'transformer.' with a classification head",
    "UMT5ForSequenceClassification": "a UMT5 nested under 'transformer.' with a classification "
                                     "head",
    "BartForSequenceClassification": "a classification head (dense, tanh, out_proj) on each "
                                     "row's last end-of-sequence token",
    "BartForCausalLM": "BART's decoder alone (no encoder, no cross-attention)",
    "GPT2DoubleHeadsModel": "a GPT-2 with a multiple-choice head beside the LM head",
} | ENCODER_REFUSED
