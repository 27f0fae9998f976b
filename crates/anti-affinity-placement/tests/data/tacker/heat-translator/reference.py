"""Writes the reference outputs of the VNFD cases in this folder.

Run with heat-translator installed (see README.md); the tests never run it.
For each CASE.vnfd.yaml it translates the VNFD with heat-translator's own
TOSCATranslator, keeps the server-group part of the result (every
OS::Nova::ServerGroup, and each OS::Nova::Server that got scheduler_hints,
reduced to those hints), and writes it with heat-translator's own
HotTemplate.output_to_yaml (CASE.hot.yaml) and as sorted, indented JSON
(CASE.hot.json).
"""
import copy
import json
import logging
import os
import sys

import yaml
from toscaparser.tosca_template import ToscaTemplate
from translator.hot.syntax.hot_template import HotTemplate
from translator.hot.tosca_translator import TOSCATranslator

logging.disable(logging.CRITICAL)


def server_group_part(resources):
    kept = []
    for resource in resources:
        if resource.type == 'OS::Nova::ServerGroup':
            kept.append(resource)
        elif (resource.type == 'OS::Nova::Server'
              and resource.properties.get('scheduler_hints')):
            server = copy.copy(resource)
            server.properties = {
                'scheduler_hints': resource.properties['scheduler_hints']}
            server.depends_on = []
            server.metadata = None
            server.update_policy = None
            kept.append(server)
    return kept


def main(folder, names):
    for name in names:
        path = os.path.join(folder, name + '.vnfd.yaml')
        tosca = ToscaTemplate(path, {}, True)
        translator = TOSCATranslator(tosca, {})
        translator.translate()
        template = HotTemplate()
        template.resources = server_group_part(
            translator.hot_template.resources)
        text = template.output_to_yaml()
        with open(os.path.join(folder, name + '.hot.yaml'), 'w') as out:
            out.write(text)
        with open(os.path.join(folder, name + '.hot.json'), 'w') as out:
            out.write(json.dumps(yaml.safe_load(text), indent=2, default=str,
                                 sort_keys=True) + '\n')


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
