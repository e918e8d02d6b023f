"""`peagle tune`: speculation settings chosen by measurement."""
