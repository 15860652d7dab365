"""The pages: the helpers the posts' markdown-exec blocks call, the claims checked against the runs,
the render cache, the plots, the glossary, the analyzer page, and one module of helpers per post (`posts`).
"""
