"""The MuranoPL interpreter.

Data flows one way through these modules: ``yaml_loader`` reads class files,
``packages`` finds packages and their classes, ``classes`` builds types,
``expressions``/``compiler`` turn yaql into closures, ``instructions`` turns
method bodies into runnable blocks, ``executor`` builds objects from a model and
runs methods, and ``serializer`` writes the model back.
"""

from murano_engine.dsl.library_imports import import_libraries

import_libraries()  # before any module here imports yaql: without costly metadata lookups
