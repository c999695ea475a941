"""The command line: the composition root. The only place (with the tests) that imports
`lab`, because the demo and the bench wire the lab to the bot."""
