"""ROUGE-1.5.5 (the Perl script's options).

The family (:mod:`.family`), weighted LCS
(:mod:`.wlcs`, ROUGE-W) and skip-bigrams (:mod:`.skipgram`, ROUGE-S/SU).
"""
