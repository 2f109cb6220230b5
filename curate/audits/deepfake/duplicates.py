"""(rules follow)"""
