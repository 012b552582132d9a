"""Fast exact ports of the stemmers XL-Sum calls: NLTK's Snowball stemmers, TurkishStemmer.

Each module returns what the original returns for every string (tested word for word against
it); sources and licences in ``NOTICE``.
"""
