"""Fast exact ports of NLTK's Snowball stemmers."""
