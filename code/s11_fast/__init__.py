"""s11_fast — speed code beside the plain modules, each swapped in at one seam and switched off by S11_PLAIN=1."""
