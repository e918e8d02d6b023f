"""`peagle capacity`: the highest request rate one instance (or copy) serves within the SLO."""
