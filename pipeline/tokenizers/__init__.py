"""Tokenizers, one module per convention.

- :mod:`.rouge_score`: rouge-score 0.1.2's tokenizer (and ``unicode``, ``whitespace``), the
  Porter stemmer and the batch tokenization every ROUGE metric shares;
  :mod:`.rouge_score_bytes` is its byte-level kernel.
- :mod:`.sacrebleu`: sacrebleu 2.x's tokenizers for BLEU and chrF++.
- :mod:`.rouge155`: the ROUGE-1.5.5 Perl script's tokenization and stemmer.
"""
