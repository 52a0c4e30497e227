"""The demo: a typical coding agent's session, with the drift real agents show, through each cache."""
