"""What each document is about, and which documents a question's names are about.

profile.py   a document's subjects (the company, product or person it is about) and the
             names it uses, read from its stored chunks
covers.py    a filing's cover: the registrant it is about, its trading symbols
names.py     names as a question writes them; a name matched with a subject's names
resolver.py  the profiles of the indexed documents (kept in the registry, read when missing)
scope.py     which documents may answer a question, by what its names are about
"""

from rag_core.entities.names import Name, asks_figure, name_matches, question_names
from rag_core.entities.profile import READER, Profile, Subject, read_profile
from rag_core.entities.resolver import Entities, EntityIndex, read_and_keep
from rag_core.entities.scope import Scope, decide, refusal

__all__ = [
    "READER",
    "Entities",
    "EntityIndex",
    "Name",
    "Profile",
    "Scope",
    "Subject",
    "asks_figure",
    "decide",
    "name_matches",
    "question_names",
    "read_and_keep",
    "read_profile",
    "refusal",
]
