"""Personal data out of everything the project keeps: the one place that looks for e-mail addresses and
phone numbers.

- :mod:`.emails`: written addresses in every form, replaced in a text, a URL or a JSON text;
- :mod:`.scrub`: the walk over a record's strings;
- :mod:`.phones`: phone numbers, validated by ``phonenumbers`` and taken only with evidence;
- :mod:`.spoken`: what a transcript says (spoken and spelled addresses, phone numbers, an address split
  across cues);
- :mod:`.stored`: API answers and lecture pages stripped of profiles and addresses before they are stored;
- :mod:`.email_like`: the dataset card's wider count of what looks like an address.

Nothing is re-exported here: each module imports only what it needs, so the parsers that scrub a value
never load the stored-page stripper (which reads the parsers' own modules).
"""
