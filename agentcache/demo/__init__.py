"""The demo: the seed document's coding-agent session, with the drift real agents show, through each cache."""
