"""Gateway API Inference Extension v1.0.2 CRDs, as the release ships them (vendored data).

Upstream publishes these CRDs as plain manifests, not as a Helm chart, so the
serving stack installs them as provider-kubernetes Objects. The three files of
``config/crd/bases`` at tag v1.0.2 (``shared/crds/gateway-api-inference-extension``)
are stored here as compressed JSON, parsed with the standard library only.
``tests/unit/test_inference_cluster_stack.py`` proves they equal the pinned files.
"""

import base64
import json
import zlib
from functools import cache
from typing import Any, Final

VERSION: Final = "v1.0.2"

_PACKED: Final = (
    "eNrtPAtv20bSf2U/fQfEDiT51aStDx8Kw0l6QRvHiN0UuNCXW5EraS/kksclbeva/PdvZvbB5UOKnaTXl4AgsLiv2dl5z+y+"
    "+WnEC/lalFrmanSMP8RtJRT+1NN3X+mpzPeuD0bj0TupEuhwWusqz14JnddlLJ6IuVSywrHjUSYqnvCKj45hUqXyimODpp+F"
    "nPCiKPNrkUzf1TNRKlEJnBymXFZVoY/39hayWtazaZxne02XiZYLvbfglbjhqwnOI9VclELFYuIh3SvqNN07OPjyCMDw7VOY"
    "4CYvAfCF28msVkkqJtd+v9cH0/3p4ej9eKR4JuCDH13keQpj1k+Gg3QhYtzfoszrIhw90N0sQeiwuHzuep/DWtCeSl19N9D0"
    "PXyH5iKtS572YIQWvczL6szM/gabsWF0BQ2wfp3ysjuIYI/zAndM4woeiwRmspjBeX5yKKHj1/FSZHS0MEqdnD9/fXThPyVC"
    "x6UsKoPTFuxMalYtBTOd2Twv6Werj2Yw3zRCGgISKURZSeHIxpNmdxUEwbSxBKlQmHXsBkTCDMQsn8N3AKIURSm0UIYq8TOH"
    "/2f/EnEFS1+IEkcywGSdJizOFfysYFCcL5T8j58OFslpnRQoUldMqgoIlafsmqe1GMOcSaQyvoKRODOrVTAF9dGw2ou8FDB0"
    "nh+zgPgdkQIDZDVw1Qr+UlUpZ3WVl3ovEdci3QN2mPAyXsoKpq9LsYcsQeAq4rZplvxvabkTSaNa0SFrmEct8NgN7XWxiWSH"
    "R8WZ6WlgbZCGn3Dbr55eXDI3v0GswWHTVQfoREwQ4Zmu8zLPaBqhkiIH3NGPOJUwjOl6lskKD+rfgKUKMQ0znZIkYTPB6gKE"
    "C4iPSD1X7BRIMz3lWvzy2EQM6gmibRCfodSzjQYjoXxoI/sCvraIFppliTQGxCkMxXZYZNrjDYfCcxm/E+UrMe+v87TbxZxw"
    "KezEjpZdP2Y6Mi9XkZwZnEmkuNZ5LBH/yBtzuQBRhKv04ZpzCXJKvMgTYSCa8zqtAJpn0HCa5lrAkDacz5ohfnbAzDK/IfAK"
    "XiJ9LDnKboOwGE6e3SyF2gx/pGDDKlcTmK6A45TXYsp+xGG1wqORcymSMbMwEm9HDZzRCHcnVJ2hVMXPL0H0wadmJ1cDBGF1"
    "Qbj13o6/xT5ONNIAd+r2cCoUiU48DYBsqIbmN6xKW41G0WjcZ9pTZBCcj1bCTWX89nuhFtVydHz46Ah+S+V+78OB8gqlGsD5"
    "j7/8/I83fPKf/cnXVztvJvavh+7T7jc7UTTd2GH34V82SyGHIxQZMu4Th5NMuJHvvFnQyCCcqYs8EAqRegVyhLhKdjCLTJDN"
    "gMjyWo+ZmC6mTJvF2Q2YICwDgGSRAuGBVtU015MWhVhQo5EhQZRP/mio+9NboxVQtbq5NRCtMkDgLKdnJy+esidnF6RjygQ3"
    "yCsSmCmQaaTyutIy8dIgTsHwgqHIkaCFdB0vGfAFS+R8LmMkA5i0FFwj185gMEjECJVTpnEKZKu8zDiaJuxyKVaMpzqn5ax4"
    "1XxOAgG63fAywT93tABATl8/nRzuHx5MDh99+cU+afDMSVyYEY9pd8qeZ4CxzKlXzV78AIri7OVlpHRdICJZCykWhbpDjI/b"
    "tHjQokUkqpPJ3y2dwV+e1Ozfu98M0poxY7rCkcCwdIU9NjHgZo45GFgTd9xf8xzxYNcknNg11wtgSzxEVW506QjbC8AWaYdc"
    "YtEMx6NIA0cKJee4AQCEG3R2MDk2CJrGRB/YWPFyISpqA3CeARnk8Ln0nKhRkGoQOsbAojkyuVgSdSWiBKpOGgvAgRwpz8m5"
    "sxKkSJO+YjHwDByk2UKoT8OtAR3zGKBzO0zhQAGQDJRNShuGPud5gnx+iaRgRmXAbQi3tAjmaiHYAU72+NGjo0cInaF+sqyr"
    "o0NDIjJDZUFdiETM74ZA0FxcwCbeA4m4Y0TlYvfWqBNnQnT7ISn3eo1Ht5PAYwJ9IBPne4EZD+a95gvsXwxS0DsrYR9YanmA"
    "JxFoG7YTKkjfaxfWLeuU6F6k8ylN8z//F0zz88+gtPUOteLSu6P3V2gU0RnkA0d5YVvgMFFy0XneLCWIOjwhkneZQExpb9Z7"
    "t4ahX4PGIQrRCox1bQbNVniCsgSLfSbA1chVuiI5b49WI+8r5wP9lcVlrvXEfwD5RUAhSZMxgYYqCTQr65FogO9rsh89WN/j"
    "Yn47BGdlbEqewvpaorhEdM7Q5MlAyslZCouRAuozMHM4AyZD6Z+j7OpIXJTlFRCqRtcERD+C0bLVEAZgBj+nY7w+qxECaQvG"
    "DUsSaUA/b3VrHx71f01ugxUnxodAT8sgHzUPokKzWqMsAMw0tAoabw57KLTt5Q6xo/dpomAYQxLUx5F66Hn28RGLl7zkwOdI"
    "KHDyyP07qH6hVWRFtdod44BaUQt9GbvhC2nMXrCvjTkAw3hagPVZZyDE4mZutmPNHFRKZsbYeY8Vh2kSrnEHO5PdMawFIhBc"
    "bjRsd97ChyQHftqZ7o6NSg9WAJoV1Y0QiujrNW7Vuo5wgmAHJOIYGx6yF6vXxvSDva+mSLL458Hh0SRbTWjERu3atvR2dt7A"
    "Pqzd9mbi/347vXq4+03QtkbLtonhRUNBDh3kXArSeV7+/PROrMYE6Xsw82WJUvjEueXmRIgOGHhr5coevjS6DInFcpCT6laG"
    "0xA0ftN8AQeGSlGxk7MnDInXuv94qCkcMsDvrZCQuh9/QbgKPx18SDqHbNMX5fCBNCiq8QH2uWwavS4DvpGaMEamqDERUQqK"
    "2yJHFiLhBvtr+4pgs9UlKtd0ZVQ9zYLygYSfJSI8DkCStXPNmtL5dOAQZ3qNARNqWhvmMlMQeDcS8Dr7EIhb7W5IAmZ9blB9"
    "QFM2P2xXXpZ81dXweJ4T16HKMxn31uyHBwLF2ybFIbgwElEPEMAFfW8dRz4jPN8vemF8+iEKMw3GkvXUbyIAgaUJAMuYVOm3"
    "JjSM3xx3BMEKlOCoCzsAGaFLJGM2NAS1Ef8YOkBhBMQhOEgiAwuJ5hMSbWWephTgIvdNgaWl2cCCRHOgSVEWodhZkf4LpmTS"
    "j48UgleKLL8WYQjEjPNmf7C6ykHYARWX+BH9xnIACNhDpGY9/BjQW/uyxI5oOTq0Tdqztg8woHNthTEelQ1UeIkjnW6NQLBA"
    "zwSOrBJWjPWhs+ZVFzquVg6CTZKJetyJPNurkkfCmRk/ZnIK3pKlqT7ZAnKNKTQAwalvaxOvpbBmqMV3mV+jfx+40dZxD6EG"
    "83M9VxlDidylllXvlGJljd8umWKEeg2d0vlfOAO3AZpRFBS5y9oe0egE5G4BnaKR+Y05oRRABlmjo9H6k/J4agwDMPe5BEsB"
    "OSJXSKDEci70YZRZKF8kpQzYq7UWbMp1dYnGMK10KYciAP0+znDFFlbhB4s9hwTf27myCK09YFRFilxiUjbSJxNmQaiSzMB0"
    "hcZJMy1YlMC6yZSx53NDHJYV3qn8RpEKV2Ayu3AeAeZnRDwYErDTEPXR2XBwKVq6DAPoExw+HMi2bmIXT7bBUPWyziiMxROc"
    "nfk2w9wIojvMhpgbtDnMoC2CgkgZAWGTDp04y9Hhl4+/GgDU8ca3Qllzrg9zv0+QoCCgpi5wP100fbxkag7nBv0tZCWO1kxd"
    "0CYw+iGRNYFtxhhgHJwNHTBniIFZPmYzi5CpIZlpIxPe3F5NB2CGGb4edwDClEtNzJGQo9fVUmtYRniAu+bN4y9GgTmz3zdn"
    "0LLAwGIfzTbgGFj4wIaLkmco0MDyTtDnBeosQwIx4R8a6NKBfncPtGW+kGTACE/q2Hr9NiwR92QT0pQR/Gh7GjvQuk2oTTPB"
    "Fayu7ZpOcI6NrgV2omCWd1tNtMEpU5iKs0UNjh/gBH6YfOWl93EbTudNaspRtaV5w6RBxJVIv0PzB/uHX2wKgRo37Crw1d6O"
    "j68eBj/X+WfrLLq2AeSROibRBl8vS8xrPuMpxg1/UCSSwrwItlNOJKXMju0xmBkxH7oA4FcbonYUHuT3GHEaHFo+FbccQx5U"
    "INDk/zoy4+Bx26v91OzFHvS6s2c8gPiOWT6glxrJ6/nMn5adbrPn8NUdnAXwlSfga1N9gJtyrUsBnSmGTSbRYGbx3DX5YA4I"
    "Hsvtq9BiDVLFJFlRK9LWKF/VMfWm7HkVTmhc/zV2ebNIE0Ie27wICqK1NtxAfs6WlwwWbfwCibtWuF7rOkM7zxht1iON1oMU"
    "jX7zqTyL+o2pvKG03aehjgPW7MqAI5z/j5pc8sHp4YWpKVzdfGiDEAOLbUZ1moODHSkVzkjR9tJGvs/yyvI1GaM8WAuzkmaj"
    "0K6a6VhrtmZBUMJgzFvAvkUt62KAoV8jO9muZjK0vdOU6gXQvfENYE6AMmriREXVxsGUXQhj5LdXj1SSx7UPrpPNYO3aoMik"
    "KUqbYpWaqzjBGhIySfb8OgucdO+e5LiWET+sZobzRN1ejYDfrGCODj8qHLV5cSqNGQTRWMGj4wotD9hhXpJbYn/Ws6a8Ccjf"
    "mzXv35vkkjdzuPVPzzpVd2ElHe4z9OlVnaZmSZG89qVw+BUA+++USn6m8kWDT3kt1tQwwgHer4rRD9hQx/jSLbqmmNG3r61o"
    "bMAeDVcv+g53K2EMU1dUq3eap3VmG/8FttY5R+YbTREHU0whAjtQKmXkcerBZ7ZOsyuQh2YqZV7KatXMct582Tzee5IxWIPO"
    "SgSyzopmspNF4MKjGzh6fzVu6jUpm3T4kVWb/pA+VLrpO5r6zW315rZ6889Qvdmnf6rn7ISXeiWdvIlcmOwUeDlUx2jDuP5Y"
    "sErHxGcTF7+NAhn0I8jjNOcJe4mGDVi6wHEgPbgvRljX1XUkyyvPBPr3xisrMXYzRuZDa0xbPkgx50pRYkzflwvkGpDHGO0z"
    "G7CRc/8DKxywmrIkkWCyAHMRr2IsbKCERg42mgldKXHjmN3GHnJt5zXrt8SCw1ykYA+ujo16ISOreMUWOU+1F1E0D9W5YZmo"
    "xQJFdCLlY0MgCkw+WLhyEBApbUdTL3lpQrVZUVd4XKBkgBiNB0qxXqTnnjwcW+j9AQYqBCDGHbCTBIy/gcSYUUFDqVdqWFPC"
    "2y6DcQVesAVKO4lbSscMFbzcyT/efK3hvh7ykMfzq/ip3fsXw0J1sMCUYQTYBqRC9sSZTN3wb9PxvLe3eTfHAmnImjd9wrUt"
    "nqOxrltmmGHiJuspSS+T2W+BJR1iCqNsQsvVGlrtEtKyLfzy65h6Dxu9tqqQBF2riMD19giimW1UdykXrWjw2IoVDAnDKEw9"
    "tyCV+q8g0sAhRLPJxo/fAuhvjVtKeu8sb1dskxwWVTcebUag1MGGeU1lZc6M1U52Ut+gZviBidY+cLExX0YZqb/B+tdYyNkt"
    "GKPBGOGuMxEMYTsuiDZQmrprksAVmqaI5VrhFsx+YMSD/Qedk6BYHgZw0Tu3ecgxYj8D0UrFKMakQJ1tSoOsGtQxqHaYZMef"
    "uRI+twlfapHsYrUQQON7uAS1aTZ6JFzYdHjLUywYsGfTjIbV7bl74nCZVEogz2VJBPKMS3B8NaV5qaBGYAoXAypUVFByQFTi"
    "arha0zckaxew1eIkRo7DfcAheiwe7Bu4DdgBQDMB6woMfw6OgwX32U5TiGeOYs5ax0Pnl1MBgRViouMC+CgNovtCZhKMgXTV"
    "AZa3lp2sBZnPq5CN+wBPRx8sp3Eq8j51KwNG271KBULPdnNJgFUub4Zz0KODr7/cn+wfwL/L/f1j+vf3IAVwPPqRy8pxf5O3"
    "b3IDIFDBzELZ3OzWZ108Rl4JnqzIKVxbpECE6mtg+iUGfstEpN/h/HesB9jm/re5/23uf5v73+b+t7n/be7/d5j7H0zebBM1"
    "93jTolauaUwSCfwddLzSCToM/5VHKn6RBM/nfaji9vO/VPFJmY/7vVexzXds8x1/qnwHkv6Hn67oyorOqxVOEA8/WOHvPQfP"
    "QNB9CXsAhbkfzc3X3i3pz/EYxWn/AQpb6LHhBYoGFOu9BQ9OtF8PmLuFf8W3Jaz52otGfvTzEX+MByO2jzz86R55+MiXHc7W"
    "XFa87NxOzFXrWYWyVsoxlZcYA+V3keqG6i/+9vKH759Y5cQ7nAt7+np//7CRRpYDjGKTfaf/k+8zrksChTf7t5fGt5fG73lp"
    "PHj+wd1/xjvecMT27QYQVzdUE96734t3PEGyNrEYu2lfNNq95QZWGb2igHpcjzc/phAmx1ovKDh6H8Nc7k56Q4DmkQc0sIuG"
    "dnsPOlBoTnCvkubgw4a0235JAjGI0M+D4llMobrMF3idqexWz7ewVeCjGIOlAC7l17tMji9imG45D0Dvv4cx2njpfa3U7PT4"
    "fV/2blm4a+5cn62/EB6G6qyl425Lk6cbBkF+5RyTS/hQmql1WcSGDS5cIMu6525HJgD0ERfL73Sp/CPvlLOdWtetG+W7/kZ5"
    "6/07f/vk02+UR6p/pbx99drBcu+71y4sH6l/4mkcM4PgMfHxsbMg/knC4443s/tYwKvZFkKjkMKbxsR3tl7LSLbcVjaQJmIT"
    "9qp3wZ1MGC0q73uEacUmSjyl4SdJ0hvbue1MWGvuxpuyuv4GYTpGG1Cu0MRdeafKqY0PYoBP/NGXzu98z/y3kVRuMfxH55X9"
    "NfP7pJS3V8y3aeZtmnmbZt6mmbdp5m2a+c9wxdzaRlTyHtinTTSeBOm9fYRf+Pb3byY6/qE72Hepave3qf9QAdzPcXu6MoYU"
    "Slmr8cfmlbG1A4IL67aq2AdguN40lvKbg1fFf8cXiH/nFSZX/w9JFqXU"
)


@cache
def _crds() -> tuple[str, ...]:
    # Parsed once per process; callers get fresh copies so nothing is shared.
    docs = json.loads(zlib.decompress(base64.b64decode(_PACKED)))
    return tuple(json.dumps(doc, sort_keys=True) for doc in docs)


def crds() -> list[dict[str, Any]]:
    """The CRDs, each a fresh dict (status included, as upstream ships it)."""
    return [json.loads(doc) for doc in _crds()]
