"""Personal data out of everything the project keeps: the one place that looks for e-mail addresses and
phone numbers.

- :mod:`.scrub`: the one scrub for every text the project keeps (:func:`.scrub.scrub_text`: addresses
  written, spoken or spelled, and phone numbers), and the walk over a record's strings;
- :mod:`.emails`: written addresses in every form, replaced in a text, a URL or a JSON text;
- :mod:`.phones`: phone numbers, validated by ``phonenumbers`` and taken only with evidence;
- :mod:`.spoken`: spoken and spelled addresses, where personal data is in a text, and a transcript's
  tracks (an address split across cues);
- :mod:`.shape`: a text's shape, for the quick look that lets most texts skip the rules;
- :mod:`.rule`: the digest that names the rules (:data:`.rule.PRIVACY_RULE`);
- :mod:`.stored`: API answers and lecture pages stripped of profiles and addresses before they are stored;
- :mod:`.email_like`: the dataset card's wider count of what looks like an address.

Nothing is re-exported here: each module imports only what it needs, so the parsers that scrub a value
never load the stored-page stripper (which reads the parsers' own modules).
"""
