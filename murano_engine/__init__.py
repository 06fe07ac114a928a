"""MuranoPL engine: loads packages, runs MuranoPL, deploys environments."""
